"""Behaviour the mutation run (issue 16) found unguarded after the catalog and answer merges.

Each test asserts what a customer reads, what staff see recorded, or what a tool is given;
the comment on each says which regression it would notice. The catalog tests run the
executor with a registry whose catalog differs from the built-in one, so an answer worded
from the wrong catalog shows.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import pytest

from agent_core.answers.compose import (
    MAX_ANSWER_UNITS,
    _clip_units,
    compose_answer,
    decision_labels,
    fit_answer,
    utf16_units,
)
from agent_core.catalog.builtin import CANCEL_ORDER, GET_ORDER_STATUS
from agent_core.catalog.spec import ResultView, Template, Texts, rule
from agent_core.execution import transitions
from agent_core.execution.results import bound
from agent_core.execution.rules import update_plan
from agent_core.execution.tools import Tool, ToolRegistry
from agent_core.models import (
    Approval,
    ErrorType,
    EventKind,
    Language,
    PlanStep,
    Run,
    RunEvent,
    RunStatus,
    StepError,
    StepStatus,
    ToolError,
)
from tests.fakes import (
    CANCEL,
    COMPENSATION,
    STATUS,
    OrderArgs,
    Script,
    fail,
    make_executor,
    make_run,
    resume,
    shop_like_tools,
)

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def clock() -> datetime:
    return NOW


# A catalog of its own: a read tool and a high-risk tool the built-in catalog does not
# know, each worded differently from anything built in.
GIFT_STATUS = GET_ORDER_STATUS.model_copy(
    update={
        "name": "gift_status",
        "confirm": Texts(
            zh="礼物 {order_id}：快递需要你确认。", en="Gift {order_id}: the courier needs your OK."
        ),
        "view": ResultView(
            lines=(Template(zh="礼物 {order_id}：{status}。", en="Gift {order_id} is {status}."),)
        ),
    }
)
GIFT_CANCEL = CANCEL_ORDER.model_copy(
    update={
        "name": "gift_cancel",
        "skip_rules": (),
        "confirm": Texts(
            zh="退回礼物 {order_id}：请确认。", en="Send gift {order_id} back: please confirm."
        ),
        "approve_label": Texts(zh="退回", en="Send {order_id} back"),
        "decline_label": Texts(zh="保留", en="Keep the gift"),
        "refusals": {"": Texts(zh="礼物 {order_id} 不能退回。", en="Gift {order_id} stays.")},
        "arg_hints": {"order_id": Texts(zh="礼物号格式不对", en="a gift number looks like G1")},
    }
)
GIFT_STATUS_STEP = ("gift_status", {"order_id": "G1"}, "order_status")
GIFT_CANCEL_STEP = ("gift_cancel", {"order_id": "G1"}, "cancel")
GIFT_LINE = "Gift G1 is shipping."  # no labels in this view: the raw status
GIFT_CONFIRM = "Send gift G1 back: please confirm."


def gift_tools(
    *, status: list[Any] | None = None, cancel: list[Any] | None = None
) -> tuple[ToolRegistry, dict[str, Script]]:
    scripts = {
        "gift_status": Script(status or [{"order_id": "G1", "status": "shipping"}]),
        "gift_cancel": Script(cancel or [{"order_id": "G1", "status": "cancelled"}]),
    }
    registry = ToolRegistry(
        [Tool.of(GIFT_STATUS, scripts["gift_status"]), Tool.of(GIFT_CANCEL, scripts["gift_cancel"])]
    )
    return registry, scripts


def kinds(events: list[RunEvent]) -> list[str]:
    return [e.kind.value for e in events]


# --- the executor words every answer from the registry's catalog -----------------------


async def test_completed_answer_is_worded_by_the_registry_catalog() -> None:
    registry, _ = gift_tools()
    executor, _, _ = make_executor(registry)
    run = await executor.start(make_run([GIFT_STATUS_STEP]))
    assert run.status is RunStatus.COMPLETED
    assert run.answer == GIFT_LINE


async def test_high_risk_pause_asks_in_the_registry_catalog_words() -> None:
    registry, _ = gift_tools()
    executor, _, _ = make_executor(registry, new_nonce=lambda: "n1")
    run = await executor.start(make_run([GIFT_STATUS_STEP, GIFT_CANCEL_STEP]))
    assert run.status is RunStatus.PAUSED
    assert run.answer == "\n".join(
        [GIFT_LINE, GIFT_CONFIRM, 'Please press "Send G1 back" or "Keep the gift" below.']
    )


async def test_decline_answer_is_worded_by_the_registry_catalog() -> None:
    registry, scripts = gift_tools()
    executor, journal, _ = make_executor(registry)
    run = await executor.start(make_run([GIFT_STATUS_STEP, GIFT_CANCEL_STEP]))
    run = await resume(executor, run, approved=False, by_user_id=10001)
    assert run.status is RunStatus.DECLINED
    assert scripts["gift_cancel"].calls == []
    assert run.answer == "\n".join(
        [GIFT_LINE, "OK, I did not \"gift_cancel {'order_id': 'G1'}\". Nothing was changed."]
    )
    assert kinds(journal.events)[-2:] == ["step_declined", "run_finished"]


async def test_expired_pause_answer_is_worded_by_the_registry_catalog() -> None:
    registry, _ = gift_tools()
    executor, journal, _ = make_executor(registry)
    run = await executor.start(make_run([GIFT_STATUS_STEP, GIFT_CANCEL_STEP]))
    run = await executor.expire(run)
    assert run.status is RunStatus.EXPIRED
    assert run.steps[1].status is StepStatus.CANCELLED
    assert (run.answer or "").splitlines()[0] == GIFT_LINE
    assert journal.events[-1].kind is EventKind.RUN_FINISHED
    assert journal.events[-1].message == "approval expired"


async def test_stale_approval_asks_again_in_the_registry_catalog_words() -> None:
    """The approved arguments changed: a new pause (new nonce), recorded and worded again."""
    registry, scripts = gift_tools()
    nonces = iter(["n1", "n2"])
    executor, journal, _ = make_executor(registry, new_nonce=lambda: next(nonces))
    run = await executor.start(make_run([GIFT_STATUS_STEP, GIFT_CANCEL_STEP]))
    assert run.pause is not None and run.pause.nonce == "n1"
    step = run.steps[1]
    step.approval = Approval(approved=True, by_user_id=10001, at=NOW)
    step.args = {"order_id": "G2"}
    run.pause.nonce = None
    run = await executor.drive(run)

    assert scripts["gift_cancel"].calls == []
    assert run.status is RunStatus.PAUSED
    assert run.pause is not None and run.pause.nonce == "n2"
    assert step.approval is None
    assert journal.events[-1].kind is EventKind.STEP_PAUSED
    assert journal.events[-1].message == "arguments_changed"
    assert "Send gift G2 back: please confirm." in (run.answer or "").splitlines()


async def test_max_steps_answer_is_worded_by_the_registry_catalog() -> None:
    registry, _ = gift_tools()
    executor, journal, _ = make_executor(registry)
    run = make_run([GIFT_STATUS_STEP, GIFT_STATUS_STEP])
    run.max_attempts = 1
    run = await executor.start(run)
    assert run.status is RunStatus.FAILED
    assert run.stop_reason == "max_steps"
    assert (run.answer or "").splitlines()[0] == GIFT_LINE
    assert journal.events[-1].kind is EventKind.RUN_FINISHED
    assert journal.events[-1].status == "failed"


async def test_failed_step_is_explained_by_the_registry_catalog() -> None:
    registry, _ = gift_tools(cancel=[fail(ErrorType.INVALID_ARGUMENTS, "refused")])
    executor, _, _ = make_executor(registry)
    run = await executor.start(make_run([GIFT_STATUS_STEP, GIFT_CANCEL_STEP]))
    run = await resume(executor, run, approved=True, by_user_id=10001)
    assert run.status is RunStatus.FAILED
    assert run.answer == "\n".join(
        [GIFT_LINE, "Gift G1 stays.", "If you need more help, please contact a human agent."]
    )


async def test_invalid_argument_before_running_is_explained_by_the_registry_catalog() -> None:
    registry, scripts = gift_tools()
    executor, journal, _ = make_executor(registry)
    run = make_run([GIFT_STATUS_STEP, ("gift_cancel", {"order_id": 7}, "cancel")])
    run.steps[1].goal = "Send the gift back"
    run = await executor.start(run)
    assert run.status is RunStatus.FAILED
    assert scripts["gift_status"].calls == []
    assert run.answer == "\n".join(
        [
            "gift_status {'order_id': 'G1'}: not done.",
            "Send the gift back: a gift number looks like G1.",
            "If you need more help, please contact a human agent.",
        ]
    )
    assert kinds(journal.events) == ["run_planned", "step_failed", "run_finished"]


async def test_pause_asked_by_the_tool_is_recorded_with_its_error_and_nonce() -> None:
    """A tool that wants a confirmation pauses the run: the pause is durable (journal),
    carries a fresh nonce, and the step keeps the tool's error for staff."""
    registry, _ = gift_tools(
        status=[fail(ErrorType.CONFIRMATION_REQUIRED, "address changed, confirm")]
    )
    executor, journal, _ = make_executor(registry, new_nonce=lambda: "n7")
    run = await executor.start(make_run([GIFT_STATUS_STEP]))

    assert run.status is RunStatus.PAUSED
    assert run.pause is not None and run.pause.nonce == "n7"
    assert run.steps[0].error is not None
    assert run.steps[0].error.type is ErrorType.CONFIRMATION_REQUIRED
    paused = journal.events[-1]
    assert paused.kind is EventKind.STEP_PAUSED
    assert paused.error_type is ErrorType.CONFIRMATION_REQUIRED
    assert paused.message == "address changed, confirm"
    # The confirm text of the registry's catalog entry, not the generic one.
    assert (run.answer or "").splitlines()[0] == "Gift G1: the courier needs your OK."


# --- rules, notices, context, listeners ---------------------------------------------------


async def test_rules_given_to_the_executor_replace_the_catalog_rules() -> None:
    """With no skip rules a delivered order's compensation step still runs."""
    registry, scripts = shop_like_tools(status=[{"order_id": "A1001", "status": "delivered"}])
    executor, journal, _ = make_executor(registry, rules=())
    run = await executor.start(make_run([STATUS, COMPENSATION]))
    assert [s.status for s in run.steps] == [StepStatus.DONE, StepStatus.DONE]
    assert len(scripts["search_policy"].calls) == 1
    assert "step_skipped" not in kinds(journal.events)


async def test_a_clipped_result_is_recorded_as_a_notice_for_staff() -> None:
    long = "x" * 5000
    script = Script([{"order_id": "A1001", "status": long}])
    registry = ToolRegistry([Tool("get_order_status", "Order status.", OrderArgs, script)])
    executor, journal, _ = make_executor(registry, clock=clock)
    run = await executor.start(make_run([STATUS]))

    _, notes = bound({"order_id": "A1001", "status": long})
    assert notes
    notices = [e for e in journal.events if e.kind is EventKind.NOTICE]
    assert [(e.run_id, e.step_id, e.tool, e.message, e.at) for e in notices] == [
        ("run1", "s1", "get_order_status", note, NOW) for note in notes
    ]
    assert kinds(journal.events) == [
        "run_planned",
        "step_started",
        "step_succeeded",
        *["notice"] * len(notes),
        "run_finished",
    ]
    assert run.status is RunStatus.COMPLETED


async def test_the_tool_gets_the_run_trace_id() -> None:
    registry, scripts = shop_like_tools()
    executor, _, _ = make_executor(registry)
    await executor.start(make_run([STATUS]))
    ctx = scripts["get_order_status"].calls[0][1]
    assert (ctx.user_id, ctx.trace_id, ctx.run_id, ctx.step_id) == (10001, "trace1", "run1", "s1")


async def test_listeners_get_the_run_and_a_failing_one_is_logged_with_its_trace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[tuple[Run, str]] = []

    async def listener(run: Run, event: RunEvent) -> None:
        seen.append((run, event.kind.value))

    async def broken(run: Run, event: RunEvent) -> None:
        raise RuntimeError("boom")

    registry, _ = shop_like_tools()
    executor, _, _ = make_executor(registry, listeners=[broken, listener])
    with caplog.at_level(logging.ERROR, logger="agent_core.execution.executor"):
        run = await executor.start(make_run([STATUS]))

    assert all(got is run for got, _ in seen)
    assert [kind for _, kind in seen] == [
        "run_planned",
        "step_started",
        "step_succeeded",
        "run_finished",
    ]
    failures = [r for r in caplog.records if r.name == "agent_core.execution.executor"]
    assert [r.getMessage() for r in failures] == [
        "listener failed on run_planned",
        "listener failed on step_started",
        "listener failed on step_succeeded",
        "listener failed on run_finished",
    ]
    assert {getattr(r, "trace_id", None) for r in failures} == {"trace1"}


async def test_a_run_already_waiting_for_a_decision_stays_paused_and_its_plan_is_recorded() -> None:
    """Driving stops at a step waiting for the customer; what was queued is still committed."""
    registry, scripts = shop_like_tools()
    seen: list[tuple[Run, str]] = []

    async def listener(run: Run, event: RunEvent) -> None:
        seen.append((run, event.kind.value))

    executor, journal, _ = make_executor(registry, listeners=[listener])
    run = make_run([STATUS])
    run.steps[0].status = StepStatus.PAUSED
    run = await executor.start(run)

    assert run.status is RunStatus.PAUSED
    assert scripts["get_order_status"].calls == []
    assert kinds(journal.events) == ["run_planned"]
    assert seen == [(run, "run_planned")]


async def test_a_run_refused_for_an_unknown_tool_keeps_the_refusal_as_its_stop_reason() -> None:
    registry, _ = shop_like_tools()
    executor, journal, _ = make_executor(registry)
    run = make_run([])
    run.refusal = "unknown_tool"
    run = await executor.start(run)
    assert run.status is RunStatus.FAILED
    assert run.stop_reason == "unknown_tool"
    assert run.answer == "If you need more help, please contact a human agent."
    assert kinds(journal.events) == ["run_planned", "run_finished"]


async def test_a_run_answered_without_steps_has_no_stop_reason() -> None:
    registry, _ = shop_like_tools()
    executor, _, _ = make_executor(registry)
    run = make_run([], language=Language.ZH)
    run.refusal = "missing_order_id"
    run = await executor.start(run)
    assert run.status is RunStatus.COMPLETED
    assert run.stop_reason is None
    assert run.answer == "请告诉我订单号（例如 A1001），我就能帮你处理。"


# --- transitions: what each one stamps on the run -------------------------------------

LATER = datetime(2026, 12, 1, 9, 5, tzinfo=UTC)


def test_a_step_keeps_its_first_start_time_across_retries_and_finishes_when_it_succeeds() -> None:
    run = make_run([STATUS])
    step = run.steps[0]
    transitions.start_step(run, step, now=NOW)
    assert step.started_at == NOW
    transitions.retry(
        run,
        step,
        ToolError(error_type=ErrorType.TIMEOUT, message="slow"),
        attempt=1,
        delay_s=0.5,
        now=NOW,
    )
    transitions.start_step(run, step, now=LATER)
    assert step.started_at == NOW
    transitions.succeed(
        run, step, {"order_id": "A1001", "status": "shipping"}, attempt=2, now=LATER
    )
    assert step.finished_at == LATER


def test_a_step_that_falls_back_or_fails_is_finished_at_that_time() -> None:
    run = make_run([COMPENSATION, STATUS])
    error = ToolError(error_type=ErrorType.EMPTY_RESULT, message="nothing")
    transitions.fall_back(run, run.steps[0], error, attempt=1, now=NOW)
    assert run.steps[0].finished_at == NOW
    internal = ToolError(error_type=ErrorType.INTERNAL, message="boom")
    transitions.fail_step(run, run.steps[1], internal, attempt=1, now=LATER)
    assert run.steps[1].finished_at == LATER
    assert run.finished_at == LATER


def test_a_decision_ends_the_pause_and_a_decline_finishes_the_step() -> None:
    run = make_run([CANCEL])
    step = run.steps[0]
    transitions.pause(run, step, reason="high_risk", nonce="n1", now=NOW)
    step.approval = Approval(approved=True, by_user_id=10001, at=NOW)
    [approved] = transitions.apply_decision(run, step, now=LATER)
    assert run.pause is None
    assert approved.kind is EventKind.STEP_APPROVED

    run = make_run([CANCEL])
    step = run.steps[0]
    transitions.pause(run, step, reason="high_risk", nonce="n1", now=NOW)
    step.approval = Approval(approved=False, by_user_id=10001, at=NOW)
    transitions.apply_decision(run, step, now=LATER)
    assert run.pause is None
    assert step.finished_at == LATER


def test_an_expired_pause_finishes_its_step() -> None:
    run = make_run([CANCEL])
    step = run.steps[0]
    transitions.pause(run, step, reason="high_risk", nonce="n1", now=NOW)
    transitions.expire(run, now=LATER)
    assert step.status is StepStatus.CANCELLED
    assert step.finished_at == LATER


def test_a_clipped_answer_is_noted_on_the_finish_event_unless_it_has_its_own_message() -> None:
    run = make_run([STATUS])
    run.steps[0].status = StepStatus.SKIPPED
    run.steps[0].skip_reason = "x" * (MAX_ANSWER_UNITS + 10)
    finished = transitions.finish(run, RunStatus.COMPLETED, now=NOW)
    assert finished.message == "answer clipped to fit two Telegram messages"
    expired = transitions.finish(run, RunStatus.EXPIRED, now=NOW, message="approval expired")
    assert expired.message == "approval expired"
    run.steps[0].skip_reason = "short"
    assert transitions.finish(run, RunStatus.COMPLETED, now=NOW).message is None


# --- answers: clipping to two Telegram messages, superseded states, generic words -------


def test_utf16_units_counts_whole_units() -> None:
    assert utf16_units("a😀") == 3
    assert type(utf16_units("ab")) is int


def test_clip_units_cuts_by_telegram_units_and_ends_with_an_ellipsis() -> None:
    assert _clip_units("abcdef", 6) == "abcdef"
    assert _clip_units("abcdefg", 4) == "abc…"
    assert _clip_units("a😀b😀", 4) == "a😀…"
    assert _clip_units("\uffff" * 5, 4) == "\uffff" * 3 + "…"  # one unit, the last of the BMP
    assert _clip_units("\U00010000" * 3, 4) == "\U00010000…"  # two units, the first beyond it


def test_fit_answer_keeps_a_short_answer_and_clips_long_lines_then_the_whole() -> None:
    short = "x" * 1000
    assert fit_answer(short) == (short, False)
    assert fit_answer(short).clipped is False
    long_line = "a" * 2500 + "\n" + "b" * 10
    assert fit_answer(long_line) == ("a" * 1999 + "…\n" + "b" * 10, True)
    many = "\n".join(["c" * 1900] * 4)
    fitted = fit_answer(many)
    assert fitted == (many[:5999] + "…", True)
    fine = "d" * 1500
    assert fit_answer(fine) == (fine, False)


def answer_run(steps: list[PlanStep], *, language: Language = Language.EN) -> Run:
    return Run(
        id="r",
        trace_id="t",
        user_id=1,
        chat_id=1,
        request_text="x",
        language=language,
        status=RunStatus.COMPLETED,
        steps=steps,
    )


def done(step_id: str, tool: str, order_id: str, observation: Any, goal: str = "goal") -> PlanStep:
    return PlanStep(
        id=step_id,
        goal=goal,
        tool=tool,
        args={"order_id": order_id},
        status=StepStatus.DONE,
        observation=observation,
    )


def test_a_cancel_after_a_status_in_a_two_step_plan_states_the_order_once() -> None:
    run = answer_run(
        [
            done("s1", "get_order_status", "A1001", {"order_id": "A1001", "status": "shipping"}),
            done("s2", "cancel_order", "A1001", {"order_id": "A1001", "status": "cancelled"}),
        ]
    )
    assert compose_answer(run) == "Order A1001 has been cancelled."


def test_superseding_looks_past_steps_without_a_state_and_keys_by_the_observed_order() -> None:
    run = answer_run(
        [
            PlanStep(id="s0", goal="Look up the refund policy", tool="search_policy",
                     args={"query": "refund"}, status=StepStatus.DONE,
                     observation=[{"title": "Refunds", "text": "30 days."}]),
            PlanStep(id="s1", goal="g", tool="search_policy", args={"query": "x"},
                     status=StepStatus.FALLBACK),
            done("s2", "get_order_status", "a1001", {"order_id": "A1001", "status": "shipping"}),
            done("s3", "cancel_order", "A1001", {"order_id": "A1001", "status": "cancelled"}),
        ]
    )  # fmt: skip
    assert compose_answer(run).splitlines()[:3] == [
        "Refunds: 30 days.",
        "I found no clear policy about \"x\", so I can't confirm it and won't guess.",
        "Order A1001 has been cancelled.",
    ]


def test_orders_told_apart_by_their_arguments_when_the_observation_has_no_order_id() -> None:
    run = answer_run(
        [
            done("s1", "get_order_status", "A1001", {"status": "shipping"}),
            done("s2", "cancel_order", "A1002", {"status": "cancelled"}),
        ]
    )
    assert compose_answer(run) == "Order A1001 is on its way.\nOrder A1002 has been cancelled."


def test_a_tool_outside_the_catalog_pauses_with_generic_words_in_both_languages() -> None:
    # Labelled by outcome from the step's goal, never a bare "Cancel" (issue 23 #1).
    for language in (Language.EN, Language.ZH):
        run = make_run([("ship_gift", {"order_id": "G1"}, None)], language=language)
        run.steps[0].goal = "Ship gift G1" if language is Language.EN else "寄出礼物 G1"
        transitions.pause(run, run.steps[0], reason="high_risk", nonce="n1", now=NOW)
        expected = {
            Language.EN: ("Yes, ship gift G1", "No, keep it"),
            Language.ZH: ("确认寄出礼物 G1", "不，保持不变"),
        }
        assert decision_labels(run) == expected[language]


def test_generic_lines_of_a_tool_outside_the_catalog_in_chinese() -> None:
    skipped = PlanStep(id="s1", goal="包礼物", tool="wrap_gift", args={}, status=StepStatus.SKIPPED)
    finished = done("s2", "wrap_gift", "G1", {"ok": True}, goal="寄礼物")
    run = answer_run([skipped, finished], language=Language.ZH)
    assert compose_answer(run) == "包礼物：已跳过。\n寄礼物：已完成。"


def test_a_plan_refused_for_invalid_arguments_points_to_a_human_in_chinese() -> None:
    run = answer_run([], language=Language.ZH)
    run.refusal = "invalid_arguments"
    assert compose_answer(run) == "如需帮助，请联系人工客服。"


# --- answers: the inputs a line is built from, when one of them is missing ---------------


def test_generic_lines_of_a_tool_outside_the_catalog_in_english() -> None:
    skipped = PlanStep(
        id="s1", goal="Wrap the gift", tool="wrap_gift", args={}, status=StepStatus.SKIPPED
    )
    finished = done("s2", "wrap_gift", "G1", {"ok": True}, goal="Send the gift")
    assert compose_answer(answer_run([skipped, finished])) == (
        "Wrap the gift: skipped.\nSend the gift: done."
    )


def test_a_pause_outside_the_catalog_is_confirmed_by_its_goal() -> None:
    step = PlanStep(
        id="s1", goal="Wrap gift G1", tool="wrap_gift", args={"order_id": "G1"},
        status=StepStatus.PAUSED,
    )  # fmt: skip
    assert compose_answer(answer_run([step])) == (
        "Wrap gift G1: this changes your order, so I need your confirmation first."
    )


def test_a_failed_lookup_names_the_order_of_its_step_or_else_the_runs_first() -> None:
    def not_found(step_id: str, args: dict[str, Any]) -> PlanStep:
        return PlanStep(
            id=step_id, goal="g", tool="get_order_status", args=args, status=StepStatus.FAILED,
            error=StepError(type=ErrorType.NOT_FOUND, message="scripted"),
        )  # fmt: skip

    first = done("s1", "get_order_status", "A1001", {"order_id": "A1001", "status": "shipping"})
    own = answer_run([first, not_found("s2", {"order_id": "A1002"})])
    borrowed = answer_run([first, not_found("s2", {})])
    assert compose_answer(own).splitlines()[1] == "I couldn't find order A1002 on this account."
    assert compose_answer(borrowed).splitlines()[1] == (
        "I couldn't find order A1001 on this account."
    )


def test_a_state_read_without_its_state_does_not_stop_later_ones_superseding() -> None:
    run = answer_run(
        [
            done("s1", "get_order_status", "A1001", {"order_id": "A1001"}),
            done("s2", "get_order_status", "A1002", ["not", "a", "dict"]),
            done("s3", "get_order_status", "A1003", {"order_id": "A1003", "status": "shipping"}),
            done("s4", "cancel_order", "A1003", {"order_id": "A1003", "status": "cancelled"}),
        ]
    )
    assert compose_answer(run).splitlines()[2:] == ["Order A1003 has been cancelled."]


def test_compose_answer_words_a_step_by_the_catalog_it_is_given() -> None:
    registry, _ = gift_tools()
    run = answer_run([done("s1", "gift_status", "G1", {"order_id": "G1", "status": "shipping"})])
    assert compose_answer(run, registry.catalog()) == GIFT_LINE


def test_a_long_line_with_spaces_that_fits_is_left_as_it_is() -> None:
    text = "word " * 300  # 1500 characters: past the shortcut, within one line's limit
    assert fit_answer(text) == (text, False)


def test_a_refusal_with_a_reason_the_catalog_does_not_know_gets_the_tools_default() -> None:
    step = PlanStep(
        id="s1", goal="g", tool="gift_cancel", args={"order_id": "G1"}, status=StepStatus.FAILED,
        error=StepError(type=ErrorType.INVALID_ARGUMENTS, message="x", code="window_closed"),
    )  # fmt: skip
    registry, _ = gift_tools()
    assert compose_answer(answer_run([step]), registry.catalog()).splitlines()[0] == (
        "Gift G1 stays."
    )


def test_a_skip_reason_naming_a_value_the_rule_does_not_have_leaves_it_blank() -> None:
    # A catalog's reason may name only {order_id} and {status}; another name reads as
    # nothing rather than losing the reason (the customer would see only "skipped").
    status = done("s1", "get_order_status", "A1001", {"order_id": "A1001", "status": "cancelled"})
    cancel = PlanStep(id="s2", goal="Cancel order A1001", tool="cancel_order",
                      args={"order_id": "A1001"})  # fmt: skip
    note = rule(
        "noted",
        after="get_order_status",
        field="status",
        values={"cancelled"},
        skip_tool="cancel_order",
        reason=Texts(
            zh="订单 {order_id} 已{status}{note}。", en="Order {order_id} is {status}{note}."
        ),
    )
    assert update_plan(answer_run([status, cancel]), [note]) == [cancel]
    assert cancel.skip_reason == "Order A1001 is cancelled."
