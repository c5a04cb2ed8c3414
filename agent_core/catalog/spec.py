"""What a declared tool is: the parts of one catalog entry, as data.

A `ToolSpec` says everything the agent knows about a tool, whoever serves it (the demo
shop, an HTTP API): what it does (zh/en), its typed arguments (a pydantic model, from which
a JSON Schema is derived), its risk and who approves a risky call, its result contract, how
a result is shown to the customer, what a pause asks, how a refusal is explained, and the
observation rules that skip later steps. `agent_core.catalog.builtin` declares the built-in tools
with these parts; a TOML file declares more (`agent_core.http.declare`).

Templates are filled by `fill`, never by `str.format`: a placeholder is a plain name, so a
template can read a field's value and nothing else (no attribute or index access, no
format spec that could pad a value to any length).
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping
from enum import StrEnum
from functools import cached_property, lru_cache
from types import MappingProxyType
from typing import Any, Final, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agent_core.models import Language, Risk, StepTag

_NAME_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


# -- templates --------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _parse(template: str) -> tuple[tuple[str, str | None, str | None, str | None], ...] | None:
    """`string.Formatter().parse`, once per template (answers fill the same few often);
    None for bad syntax."""
    try:
        return tuple(string.Formatter().parse(template))
    except ValueError:
        return None


def placeholders(template: str) -> list[str]:
    """The names a template reads, in order. ValueError for anything but `{name}`."""
    parts = _parse(template)
    if parts is None:
        try:
            list(string.Formatter().parse(template))
        except ValueError as exc:
            raise ValueError(f"bad placeholder syntax ({exc})") from None
    names = []
    for _, name, spec, conversion in parts or ():
        if name is None:
            continue
        if not name or not set(name) <= _NAME_CHARS or name[0].isdigit():
            raise ValueError(f"placeholder {{{name}}} must be a plain field name")
        if spec or conversion:
            raise ValueError(f"placeholder {{{name}}} takes no format spec or conversion")
        names.append(name)
    return names


# A template checked once: its literal text and placeholder names alternating, as `fill`
# reads them; None when a placeholder is anything but a plain name.
Compiled = tuple[tuple[str, str | None], ...]


@lru_cache(maxsize=4096)
def compile_template(template: str) -> Compiled | None:
    """`template` as (literal, name or None) pairs, checked once per distinct template
    (a catalog's few dozen texts fill every answer), so filling it reads no syntax."""
    parts = _parse(template)
    if parts is None:
        return None
    compiled = []
    for literal, name, spec, conversion in parts:
        if name is not None and (spec or conversion or not name or not set(name) <= _NAME_CHARS):
            return None
        compiled.append((literal, name))
    return tuple(compiled)


def fill(template: str, values: Mapping[str, str], *, missing: str | None = None) -> str | None:
    """`template` with each `{name}` replaced by `values[name]`.

    A name without a value makes the result None, unless `missing` says what to put there.
    Only plain names are read (see `placeholders`); a bad template fills to None.
    """
    compiled = compile_template(template)
    return None if compiled is None else fill_compiled(compiled, values, missing)


def fill_compiled(
    compiled: Compiled, values: Mapping[str, str | None], missing: str | None = None
) -> str | None:
    """`fill` of a template `compile_template` has already checked."""
    out = []
    for literal, name in compiled:
        out.append(literal)
        if name is None:
            continue
        value = values.get(name)
        if value is None:
            if missing is None:
                return None
            value = missing
        out.append(value)
    return "".join(out)


@lru_cache(maxsize=4096)
def _names(*templates: str) -> frozenset[str]:
    return frozenset(name for template in templates for name in placeholders(template))


class Texts(BaseModel):
    """One text in each language the agent speaks."""

    model_config = ConfigDict(frozen=True)

    zh: str
    en: str

    def __getitem__(self, language: Language) -> str:
        return self.zh if language is Language.ZH else self.en

    def names(self) -> frozenset[str]:
        return _names(self.zh, self.en)


class Template(Texts):
    """One way to show a result: used when every field it names has a value and, for each
    field in `when`, the result's value is one of those listed."""

    when: Mapping[str, tuple[str, ...]] = Field(default_factory=dict)

    def fits(self, values: Mapping[str, str], raw: Mapping[str, Any]) -> bool:
        if self.when and any(
            str(raw.get(name)) not in allowed for name, allowed in self.when.items()
        ):
            return False
        return all(values.get(name) for name in _names(self.zh, self.en))


class ResultView(BaseModel):
    """How a result is shown to the customer.

    `lines`: the first template that fits shows the result (a dict). `each`: the list whose
    items are shown one line each with the first fitting `item_lines` template, at most
    `max_items` of them ("" = the result itself is the list, or `{"results": [...]}`).
    `labels`: the customer's words for a field's values (`status: shipping` → "on its way").
    """

    model_config = ConfigDict(frozen=True)

    lines: tuple[Template, ...] = ()
    each: str | None = None
    item_lines: tuple[Template, ...] = ()
    max_items: int = Field(3, ge=1, le=10)
    labels: Mapping[str, Mapping[str, Texts]] = Field(default_factory=dict)

    @cached_property
    def compiled(self) -> Mapping[Language, CompiledView]:
        """The view per language, its templates checked and its labels resolved once (the
        first time a result is shown), so showing a result reads plain tuples and dicts."""
        return {language: _compile_view(self, language) for language in Language}

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        # A copy with other fields must not keep the compiled form of these.
        copied = super().model_copy(update=update, deep=deep)
        copied.__dict__.pop("compiled", None)
        return copied


# A template as `render` reads it: `when` (field, allowed values), the names it needs (both
# languages'), why they could not be read (a bad placeholder: raised when the line is
# tried, as `Template.fits` does), and the text in one language (a plain-name template,
# filled by `str.format_map`).
CompiledLine = tuple[tuple[tuple[str, frozenset[str]], ...], tuple[str, ...], str | None, str]
# lines, each, item_lines, max_items, labels (field → value → the customer's words).
CompiledView = tuple[
    tuple[CompiledLine, ...],
    str | None,
    tuple[CompiledLine, ...],
    int,
    Mapping[str, Mapping[str, str]],
]


def _compile_line(template: Template, language: Language) -> CompiledLine:
    when = tuple((name, frozenset(allowed)) for name, allowed in template.when.items())
    try:
        names, problem = tuple(template.names()), None
    except ValueError as exc:
        names, problem = (), str(exc)
    return when, names, problem, template[language]


def _compile_view(view: ResultView, language: Language) -> CompiledView:
    return (
        tuple(_compile_line(t, language) for t in view.lines),
        view.each,
        tuple(_compile_line(t, language) for t in view.item_lines),
        view.max_items,
        {
            name: {value: texts[language] for value, texts in by_value.items()}
            for name, by_value in view.labels.items()
        },
    )


# -- observation rules ------------------------------------------------------------------


class SkipRule(BaseModel):
    """After a `done` step of `after_tool` observed `field` in `values`, skip the pending
    steps this rule targets (same order, or no order) with `reason`.

    A rule targets steps by `skip_tool`, by `skip_tag` (why the planner put the step there),
    or both. `reason` may use `{order_id}` and `{status}` (the observed value).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    after_tool: str
    field: str
    values: frozenset[str]
    reason: Mapping[Language, str]
    skip_tag: StepTag | None = None
    skip_tool: str | None = None

    @model_validator(mode="after")
    def _targets_something(self) -> SkipRule:
        if self.skip_tag is None and self.skip_tool is None:
            raise ValueError("a rule needs skip_tool or skip_tag")
        return self


def rule(
    name: str,
    *,
    after: str,
    field: str,
    values: Iterable[str],
    reason: Texts,
    skip_tool: str | None = None,
    skip_tag: StepTag | None = None,
) -> SkipRule:
    """A `SkipRule` written the way the catalog reads."""
    return SkipRule(
        name=name,
        after_tool=after,
        field=field,
        values=frozenset(values),
        reason={Language.ZH: reason.zh, Language.EN: reason.en},
        skip_tool=skip_tool,
        skip_tag=skip_tag,
    )


class RuleBook(tuple[SkipRule, ...]):
    """Observation rules in catalog order, indexed once for `update_plan`, which reads them
    after every step: tool → observed field → value → the rules (with their places in
    the book) that fire on it. A step whose tool no rule reads costs one lookup, and the
    rules of one that has some are found by its observed values, not tried one by one."""

    by_tool: Mapping[str, Mapping[str, Mapping[Any, tuple[tuple[int, SkipRule], ...]]]]

    def __new__(cls, rules: Iterable[SkipRule] = ()) -> RuleBook:
        book = super().__new__(cls, rules)
        index: dict[str, dict[str, dict[Any, list[tuple[int, SkipRule]]]]] = {}
        for place, rule in enumerate(book):
            by_value = index.setdefault(rule.after_tool, {}).setdefault(rule.field, {})
            for value in rule.values:
                by_value.setdefault(value, []).append((place, rule))
        book.by_tool = {
            tool: {
                field: {value: tuple(found) for value, found in by_value.items()}
                for field, by_value in fields.items()
            }
            for tool, fields in index.items()
        }
        return book

    def fired(self, tool: str, observation: Mapping[str, Any]) -> list[SkipRule]:
        """The rules an observation of `tool` fires, in book order."""
        fields = self.by_tool.get(tool)
        if fields is None:
            return []
        found: list[tuple[int, SkipRule]] = []
        for field, by_value in fields.items():
            value = observation.get(field)
            try:
                found.extend(by_value.get(value, ()))
            except TypeError:  # an unhashable value (a list) is in no rule's values
                continue
        if len(fields) > 1:
            found.sort(key=lambda pair: pair[0])
        return [rule for _, rule in found]


# -- the entry --------------------------------------------------------------------------


class Approver(StrEnum):
    """Who must approve a high-risk call before it runs (the handoff issue adds staff)."""

    CUSTOMER = "customer"


class Phrases(BaseModel):
    """What customers say when they want this tool (for a planner to read; a tool declared
    only in a TOML file brings its own)."""

    model_config = ConfigDict(frozen=True)

    zh: tuple[str, ...] = ()
    en: tuple[str, ...] = ()

    def __getitem__(self, language: Language) -> tuple[str, ...]:
        return self.zh if language is Language.ZH else self.en


GENERIC_CONFIRM: Final = Texts(
    zh="{goal}：这一步会修改你的订单，需要你确认后才会执行。",
    en="{goal}: this changes your order, so I need your confirmation first.",
)
# A tool that names no buttons: labelled by outcome from the step's goal ("Yes, cancel
# order A1003"), never "Confirm"/"Cancel" (under "Cancel order A1003", a button called
# "Cancel" would mean *keep* the order). `{goal}` here starts lower-case in English.
GENERIC_APPROVE: Final = Texts(zh="确认{goal}", en="Yes, {goal}")
GENERIC_DECLINE: Final = Texts(zh="不，保持不变", en="No, keep it")


class ToolSpec(BaseModel):
    """What the agent knows about a tool, whoever serves it."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    # What the tool does, for planners and staff. `en` is also the `Tool.description`.
    description: Texts
    args_model: type[BaseModel]
    # The risk a backend cannot lower: a high-risk tool always asks first.
    risk: Risk
    # Who approves a high-risk call; None for a read.
    approval: Approver | None = None
    # A plan step's goal, filled with the step's arguments (`{order_id}`, `{query}`).
    goal: Texts
    # The result contract: a dict keeping `result_model` (extra fields pass through), or,
    # with `result_is_list`, a list of them (`{"results": [...]}` is read as that list).
    # None: anything goes (a tool the agent only quotes).
    result_model: type[BaseModel] | None = None
    result_is_list: bool = False
    # A result whose `empty_field` is empty or missing is `empty_result`.
    empty_field: str | None = None
    # The result field that is the order's state after the call (the answer states each
    # order's latest observed state only once).
    state_field: str | None = None
    # Longest value (characters) of a result field shown to customers; see `bounds`.
    bounds: Mapping[str, int] = Field(default_factory=dict)
    view: ResultView = ResultView()
    # What the answer says when the step found nothing (filled with the arguments).
    empty: Texts | None = None
    # What a pause asks ({goal} and the arguments), and the two buttons' words.
    confirm: Texts = GENERIC_CONFIRM
    approve_label: Texts = GENERIC_APPROVE
    decline_label: Texts = GENERIC_DECLINE
    # Why the backend refused (`invalid_arguments`), by the failure's code; "" is the
    # explanation for a refusal without a (known) code. Filled with the arguments.
    refusals: Mapping[str, Texts] = Field(default_factory=dict)
    # What a valid value of an argument looks like, for a customer whose value was not.
    arg_hints: Mapping[str, Texts] = Field(default_factory=dict)
    # Observation rules that skip steps of this tool (or, by tag, of the plan).
    skip_rules: tuple[SkipRule, ...] = ()
    phrases: Phrases | None = None
    # What the customer can ask this tool for, as a short phrase with an example, for the
    # "what I can help with" answer (`agent_core.answers.compose.offer_line`); None: from the
    # description.
    offer: Texts | None = None
    # Arguments for `stepwise tools check --probe`; None: never probed (a probe must be
    # harmless, so a high-risk tool never has them).
    probe_args: Mapping[str, Any] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ToolSpec:
        if self.risk is Risk.HIGH and self.approval is None:
            raise ValueError(f"{self.name}: a high-risk tool needs an approver")
        if self.risk is Risk.READ and self.approval is not None:
            raise ValueError(f"{self.name}: a read tool needs no approval")
        if self.risk is Risk.HIGH and self.probe_args is not None:
            raise ValueError(f"{self.name}: a high-risk tool is never probed")
        return self

    def goal_for(self, language: Language, **args: Any) -> str:
        """The goal of a step with `args` (normalised when they are valid: "59" → "59.00")."""
        return fill(self.goal[language], self.display_args(args), missing="") or ""

    def display_args(self, args: Mapping[str, Any]) -> dict[str, str]:
        """Arguments as a customer should read them: normalised by the args model when
        valid, as given otherwise."""
        # `model_validate(...).model_dump(mode="json")` without their Python wrappers:
        # every answer and Confirm prompt shows arguments, so this runs several times a run.
        model = self.args_model
        try:
            values: Mapping[str, Any] = model.__pydantic_serializer__.to_python(
                model.__pydantic_validator__.validate_python(dict(args)), mode="json"
            )
        except (ValidationError, TypeError):
            values = args
        return {k: v if isinstance(v, str) else str(v) for k, v in values.items() if v is not None}

    def args_schema(self) -> dict[str, Any]:
        """The arguments as JSON Schema (for a model planner and `stepwise tools`)."""
        return self.args_model.model_json_schema()

    def result_schema(self) -> dict[str, Any] | None:
        if self.result_model is None:
            return None
        schema = self.result_model.model_json_schema()
        return {"type": "array", "items": schema} if self.result_is_list else schema

    def check_args(self, args: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
        """(normalised arguments, None), or (None, the first bad argument's name)."""
        try:
            model = self.args_model.model_validate(dict(args))
        except ValidationError as exc:
            errors = exc.errors(include_url=False, include_input=False)
            loc = errors[0]["loc"] if errors else ()
            return None, str(loc[0]) if loc else ""
        return model.model_dump(mode="json"), None


def catalog_of(specs: Iterable[ToolSpec]) -> Mapping[str, ToolSpec]:
    """A read-only catalog (name → spec); a later spec of the same name replaces one before."""
    return MappingProxyType({spec.name: spec for spec in specs})
