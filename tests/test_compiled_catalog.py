"""The catalog's compiled forms (rules indexed, views compiled once) decide as the plain
data does: rule order across fields, values a rule cannot hold, a copied view, a bad
template, labels and argument fallbacks."""

from __future__ import annotations

import pytest

from agent_core.answers.render import render_result
from agent_core.catalog.builtin import CATALOG, GET_ORDER_STATUS, OrderArgs
from agent_core.catalog.spec import (
    ResultView,
    RuleBook,
    SkipRule,
    Template,
    Texts,
    ToolSpec,
    compile_template,
    fill,
)
from agent_core.execution.rules import update_plan
from agent_core.models import Language, PlanStep, Risk, Run, StepStatus, StepTag


def _rule(name: str, field: str, value: str, tag: StepTag) -> SkipRule:
    return SkipRule(
        name=name, after_tool="src", field=field, values=frozenset({value}), skip_tag=tag,
        reason={Language.EN: name, Language.ZH: name},
    )  # fmt: skip


def _run(*steps: PlanStep) -> Run:
    return Run(
        id="r1", trace_id="t", user_id=1, chat_id=1, request_text="x",
        language=Language.EN, steps=list(steps),
    )  # fmt: skip


def test_rules_on_two_fields_skip_in_book_order_whichever_field_fires() -> None:
    # The book lists the `b` rule first; indexed by field, `a` would come first.
    rules = [_rule("by_b", "b", "2", StepTag.POLICY), _rule("by_a", "a", "1", StepTag.CANCEL)]
    source = PlanStep(
        id="s1", goal="g", tool="src", status=StepStatus.DONE, observation={"a": "1", "b": "2"}
    )
    cancel = PlanStep(id="s2", goal="g", tool="t", tag=StepTag.CANCEL)
    policy = PlanStep(id="s3", goal="g", tool="t", tag=StepTag.POLICY)
    book = RuleBook(rules)
    assert [r.name for r in book.fired("src", {"a": "1", "b": "2"})] == ["by_b", "by_a"]
    assert book.fired("other", {"a": "1"}) == []
    assert update_plan(_run(source, cancel, policy), book) == [policy, cancel]
    assert (policy.skip_reason, cancel.skip_reason) == ("by_b", "by_a")
    assert tuple(book) == tuple(rules)  # still the rules, in order, as a tuple


def test_an_unhashable_observed_value_fires_no_rule() -> None:
    book = RuleBook([_rule("r", "a", "1", StepTag.POLICY)])
    assert book.fired("src", {"a": ["1"]}) == []


def test_a_copied_view_shows_its_own_templates() -> None:
    view = GET_ORDER_STATUS.view
    data = {"order_id": "A1", "status": "pending"}
    assert render_result(GET_ORDER_STATUS, data, {}, Language.EN) == "Order A1 is not shipped yet."
    other = view.model_copy(update={"lines": (Template(zh="{order_id}", en="#{order_id}"),)})
    spec = GET_ORDER_STATUS.model_copy(update={"view": other})
    assert render_result(spec, data, {}, Language.EN) == "#A1"
    assert render_result(GET_ORDER_STATUS, data, {}, Language.ZH) == "订单 A1：待发货。"


def _spec(*lines: Template, labels: dict[str, dict[str, Texts]] | None = None) -> ToolSpec:
    return ToolSpec(
        name="x", description=Texts(zh="x", en="x"), args_model=OrderArgs, risk=Risk.READ,
        goal=Texts(zh="x", en="x"), view=ResultView(lines=lines, labels=labels or {}),
    )  # fmt: skip


def test_a_bad_template_raises_only_when_it_is_tried() -> None:
    bad = Template(zh="{a.b}", en="{a.b}", when={"kind": ("bad",)})
    spec = _spec(bad, Template(zh="{a}", en="ok {a}"))
    assert render_result(spec, {"kind": "good", "a": "1"}, {}, Language.EN) == "ok 1"
    with pytest.raises(ValueError, match="plain field name"):
        render_result(spec, {"kind": "bad", "a": "1"}, {}, Language.EN)


def test_fields_fall_back_to_arguments_labels_apply_and_blank_values_do_not_fit() -> None:
    labels = {"s": {"x": Texts(zh="叉", en="ex")}}
    spec = _spec(Template(zh="{order_id} {s}", en="{order_id} is {s}"), labels=labels)
    args = {"order_id": "A9"}
    assert render_result(spec, {"s": " x "}, args, Language.EN) == "A9 is ex"
    assert render_result(spec, {"s": "x", "order_id": {"n": 1}}, args, Language.ZH) == "A9 叉"
    assert render_result(spec, {"s": "  "}, args, Language.EN) is None
    assert render_result(spec, {"s": 5}, args, Language.EN) == "A9 is 5"


@pytest.mark.parametrize(
    ("template", "filled"),
    [("{a}-{{b}}", "1-{b}"), ("{a:>9}", None), ("{a!r}", None), ("{", None), ("{c}", None)],
)
def test_fill_reads_plain_names_only(template: str, filled: str | None) -> None:
    assert fill(template, {"a": "1"}) == filled
    assert (compile_template(template) is None) == (template in ("{a:>9}", "{a!r}", "{"))


def test_the_catalogs_rules_are_a_rule_book() -> None:
    from agent_core.execution.rules import DEFAULT_RULES

    assert isinstance(DEFAULT_RULES, RuleBook)
    assert {r.after_tool for r in DEFAULT_RULES} <= set(CATALOG)
