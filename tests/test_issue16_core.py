"""Behaviour of the failure policy and the observation rules, asserted exactly (issue 16).

The decision table and the skip rules are data; these tests pin what each entry means for
a customer's run, so dropping or changing one is noticed.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from agent_core.answers.compose import compose_answer
from agent_core.execution.policy import DEFAULT_TABLE, Backoff, FailurePolicy
from agent_core.execution.rules import DEFAULT_RULES, SkipRule, update_plan
from agent_core.models import (
    Decision,
    ErrorType,
    Language,
    PlanStep,
    Run,
    RunStatus,
    StepError,
    StepStatus,
    StepTag,
)

# -- policy --------------------------------------------------------------------------------


def test_the_decision_for_every_error_type() -> None:
    policy = FailurePolicy()
    decisions = {e: policy.decide(e, retry_count=0, max_retries=2) for e in ErrorType}
    assert decisions == {
        ErrorType.TIMEOUT: Decision.RETRY,
        ErrorType.UNAVAILABLE: Decision.RETRY,
        ErrorType.EMPTY_RESULT: Decision.FALLBACK,
        ErrorType.CONFIRMATION_REQUIRED: Decision.PAUSE,
        ErrorType.NOT_FOUND: Decision.STOP,
        ErrorType.INVALID_ARGUMENTS: Decision.STOP,
        ErrorType.UNKNOWN_TOOL: Decision.STOP,
        ErrorType.PERMISSION_DENIED: Decision.STOP,
        ErrorType.INTERNAL: Decision.STOP,
        ErrorType.UNKNOWN_OUTCOME: Decision.STOP,
        ErrorType.BACKEND: Decision.STOP,
    }
    assert dict(DEFAULT_TABLE) == decisions


@pytest.mark.parametrize(
    ("retry_count", "max_retries", "expected"),
    [
        (0, 2, Decision.RETRY),
        (1, 2, Decision.RETRY),
        (2, 2, Decision.STOP),
        (3, 2, Decision.STOP),
        (0, 0, Decision.STOP),
        (0, 1, Decision.RETRY),
    ],
)
def test_a_retry_without_budget_left_stops(
    retry_count: int, max_retries: int, expected: Decision
) -> None:
    policy = FailurePolicy()
    decision = policy.decide(ErrorType.TIMEOUT, retry_count=retry_count, max_retries=max_retries)
    assert decision is expected


def test_the_budget_only_limits_retries() -> None:
    policy = FailurePolicy()
    for error, decision in (
        (ErrorType.EMPTY_RESULT, Decision.FALLBACK),
        (ErrorType.CONFIRMATION_REQUIRED, Decision.PAUSE),
        (ErrorType.NOT_FOUND, Decision.STOP),
    ):
        assert policy.decide(error, retry_count=5, max_retries=0) is decision


def test_a_tools_overrides_win_and_fall_back_to_the_table() -> None:
    policy = FailurePolicy()
    overrides = {ErrorType.TIMEOUT: Decision.STOP, ErrorType.NOT_FOUND: Decision.FALLBACK}
    decide = policy.decide
    assert decide(ErrorType.TIMEOUT, retry_count=0, max_retries=2, overrides=overrides) is (
        Decision.STOP
    )
    assert decide(ErrorType.NOT_FOUND, retry_count=0, max_retries=2, overrides=overrides) is (
        Decision.FALLBACK
    )
    assert decide(ErrorType.UNAVAILABLE, retry_count=0, max_retries=2, overrides=overrides) is (
        Decision.RETRY
    )
    retry_override = {ErrorType.INTERNAL: Decision.RETRY}
    assert decide(ErrorType.INTERNAL, retry_count=0, max_retries=1, overrides=retry_override) is (
        Decision.RETRY
    )
    assert decide(ErrorType.INTERNAL, retry_count=1, max_retries=1, overrides=retry_override) is (
        Decision.STOP
    )


def test_an_error_missing_from_a_custom_table_stops() -> None:
    policy = FailurePolicy(table={ErrorType.TIMEOUT: Decision.RETRY})
    assert policy.decide(ErrorType.EMPTY_RESULT, retry_count=0, max_retries=2) is Decision.STOP
    assert policy.decide(ErrorType.TIMEOUT, retry_count=0, max_retries=2) is Decision.RETRY


@pytest.mark.parametrize(
    ("retry_number", "rand", "expected"),
    [
        (0, 0.5, 0.5),
        (1, 0.5, 0.5),
        (1, 0.0, 0.375),
        (1, 1.0, 0.625),
        (2, 0.5, 1.0),
        (3, 0.5, 2.0),
        (4, 0.0, 3.0),
        (5, 0.5, 8.0),
        (5, 1.0, 8.0),  # jitter never goes above the cap
        (5, 0.0, 6.0),
        (9, 0.5, 8.0),
    ],
)
def test_backoff_doubles_with_jitter_up_to_the_cap(
    retry_number: int, rand: float, expected: float
) -> None:
    assert Backoff().delay(retry_number, lambda: rand) == pytest.approx(expected)


def test_backoff_is_never_negative_and_honours_its_fields() -> None:
    assert Backoff(jitter=2.0).delay(1, lambda: 0.0) == 0.0
    custom = Backoff(base_s=1.0, factor=3.0, cap_s=20.0, jitter=0.0)
    assert [custom.delay(n, lambda: 0.9) for n in (1, 2, 3, 4)] == [1.0, 3.0, 9.0, 20.0]


# -- rules ---------------------------------------------------------------------------------


def _run(*steps: PlanStep, language: Language = Language.EN) -> Run:
    return Run(
        id="r", trace_id="t", user_id=1, chat_id=1, request_text="x", language=language,
        steps=list(steps),
    )  # fmt: skip


def _status(status: str, order_id: str = "A1001", done: bool = True) -> PlanStep:
    return PlanStep(
        id="s1",
        goal="status",
        tool="get_order_status",
        args={"order_id": order_id},
        tag=StepTag.ORDER_STATUS,
        status=StepStatus.DONE if done else StepStatus.FAILED,
        observation={"order_id": order_id, "status": status},
    )


def _later(tag: StepTag, n: int = 2, order_id: str | None = None, **kw: object) -> PlanStep:
    args = {"order_id": order_id} if order_id else {"query": "q"}
    return PlanStep(id=f"s{n}", goal=f"step {n}", tool="t", args=args, tag=tag, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "tag", "rule", "language", "reason"),
    [
        ("delivered", StepTag.DELAY_COMPENSATION, "delivered_needs_no_compensation", Language.EN,
         "Order A1001 has been delivered, so delay compensation does not apply."),
        ("cancelled", StepTag.DELAY_COMPENSATION, "cancelled_needs_no_compensation", Language.ZH,
         "订单 A1001 已取消，不涉及延迟补偿。"),
        ("delivered", StepTag.CANCEL, "delivered_cannot_be_cancelled", Language.ZH,
         "订单 A1001 已签收，无法取消；如需退货，可以问我“退货政策是什么”。"),
        ("cancelled", StepTag.CANCEL, "already_cancelled", Language.EN,
         "Order A1001 is already cancelled; nothing more to do."),
    ],
)  # fmt: skip
def test_each_rule_skips_its_tag_with_its_reason(
    status: str, tag: StepTag, rule: str, language: Language, reason: str
) -> None:
    assert rule in {r.name for r in DEFAULT_RULES}
    later = _later(tag, order_id="A1001" if tag is StepTag.CANCEL else None)
    run = _run(_status(status), later, language=language)
    assert update_plan(run) == [later]
    assert later.status is StepStatus.SKIPPED
    assert later.skip_reason == reason
    assert isinstance(later.finished_at, datetime)
    assert update_plan(run) == []  # already skipped: nothing new


@pytest.mark.parametrize("status", ["shipping", "pending", "unknown"])
def test_an_order_on_its_way_skips_nothing(status: str) -> None:
    steps = [_later(StepTag.DELAY_COMPENSATION), _later(StepTag.CANCEL, 3, "A1001")]
    run = _run(_status(status), *steps)
    assert update_plan(run) == []
    assert [s.status for s in steps] == [StepStatus.PENDING, StepStatus.PENDING]
    assert [s.skip_reason for s in steps] == [None, None]


def test_rules_only_follow_a_done_step_with_a_dict_observation() -> None:
    failed = _status("delivered", done=False)
    later = _later(StepTag.DELAY_COMPENSATION)
    assert update_plan(_run(failed, later)) == []
    listed = _status("delivered")
    listed.observation = ["delivered"]
    assert update_plan(_run(listed, later)) == []
    assert later.status is StepStatus.PENDING


def test_rules_leave_other_orders_other_tags_and_finished_steps_alone() -> None:
    other_order = _later(StepTag.CANCEL, 2, "A2002")
    policy = _later(StepTag.POLICY, 3)
    done = _later(StepTag.DELAY_COMPENSATION, 4, status=StepStatus.DONE)
    same_order = _later(StepTag.CANCEL, 5, "A1001")
    run = _run(_status("delivered"), other_order, policy, done, same_order)
    assert update_plan(run) == [same_order]
    assert [s.status for s in (other_order, policy, done)] == [
        StepStatus.PENDING,
        StepStatus.PENDING,
        StepStatus.DONE,
    ]


def test_a_rule_only_follows_its_own_tool_and_field() -> None:
    rule = SkipRule(
        name="custom",
        after_tool="other_tool",
        field="state",
        values=frozenset({"closed"}),
        skip_tag=StepTag.POLICY,
        reason={Language.EN: "{order_id} is {status}", Language.ZH: "{order_id}：{status}"},
    )
    source = PlanStep(
        id="s1", goal="g", tool="other_tool", args={"order_id": "B7"}, status=StepStatus.DONE,
        observation={"state": "closed", "status": "delivered"},
    )  # fmt: skip
    policy = _later(StepTag.POLICY)
    compensation = _later(StepTag.DELAY_COMPENSATION, 3)
    rules = (*DEFAULT_RULES, rule)  # the default rules look at another tool and field
    assert update_plan(_run(source, policy, compensation), rules) == [policy]
    assert policy.skip_reason == "B7 is closed"
    assert compensation.status is StepStatus.PENDING


def test_a_source_without_an_order_id_reasons_with_an_empty_one() -> None:
    rule = SkipRule(
        name="custom", after_tool="t0", field="f", values=frozenset({"v"}),
        skip_tag=StepTag.POLICY, reason={Language.EN: "[{order_id}]", Language.ZH: "[{order_id}]"},
    )  # fmt: skip
    source = PlanStep(id="s1", goal="g", tool="t0", status=StepStatus.DONE, observation={"f": "v"})
    later = _later(StepTag.POLICY)
    assert update_plan(_run(source, later), [rule]) == [later]
    assert later.skip_reason == "[]"


def test_a_step_without_an_observation_does_not_hide_a_later_source() -> None:
    # A policy lookup that comes first (still pending) must not stop the rules from
    # reading the status step after it.
    first = _later(StepTag.POLICY, 1)
    status = _status("delivered")
    status.id = "s2"
    compensation = _later(StepTag.DELAY_COMPENSATION, 3)
    assert update_plan(_run(first, status, compensation)) == [compensation]


# -- answers: edge cases of what a tool returned ---------------------------------------------


def _answer(step: PlanStep, *, failed: bool = False) -> str:
    run = _run(step)
    run.status = RunStatus.FAILED if failed else RunStatus.COMPLETED
    return compose_answer(run)


def test_an_observation_without_the_order_id_uses_the_steps_argument() -> None:
    status = _status("shipping")
    status.observation = {"status": "shipping", "eta": "2026-12-03"}
    assert _answer(status) == "Order A1001 is on its way, expected 2026-12-03."
    cancel = PlanStep(
        id="s1", goal="Cancel order A1001", tool="cancel_order", args={"order_id": "A1001"},
        status=StepStatus.DONE, observation={"status": "cancelled"},
    )  # fmt: skip
    assert _answer(cancel) == "Order A1001 has been cancelled."


def test_a_policy_with_only_a_title_or_only_a_text_is_quoted_as_it_is() -> None:
    lookup = PlanStep(
        id="s1", goal="Look up the refund policy", tool="search_policy",
        args={"query": "refund"}, status=StepStatus.DONE,
        observation=[{"text": "Only text."}, {"title": "Only title"}],
    )  # fmt: skip
    assert _answer(lookup) == "Only text.\nOnly title"


def test_a_fallback_without_a_query_and_a_failure_without_an_error() -> None:
    fallback = PlanStep(
        id="s1", goal="Look up a policy", tool="search_policy", status=StepStatus.FALLBACK
    )
    assert _answer(fallback) == (
        "I found no clear policy about \"\", so I can't confirm it and won't guess.\n"
        "If you need more help, please contact a human agent."
    )
    failed = _status("shipping", done=False)
    failed.observation = None
    assert _answer(failed, failed=True) == (
        "status: something went wrong on our side, so this was not done.\n"
        "If you need more help, please contact a human agent."
    )


def test_one_retry_is_one_time() -> None:
    timed_out = _status("shipping", done=False)
    timed_out.observation = None
    timed_out.retry_count = 1
    timed_out.error = StepError(type=ErrorType.TIMEOUT, message="slow")
    assert _answer(timed_out, failed=True).split("\n")[0] == (
        "status: the system did not respond (retried 1 time), so this was not done."
    )
