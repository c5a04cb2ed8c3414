"""Every path of the Plan-Act-Observe executor, with scripted tools and no waiting."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel

from agent_core.execution import transitions
from agent_core.execution.executor import Executor
from agent_core.execution.policy import Backoff, FailurePolicy
from agent_core.execution.tools import Tool, ToolContext, ToolRegistry
from agent_core.models import (
    Decision,
    ErrorType,
    EventKind,
    Language,
    PlanStep,
    Run,
    RunEvent,
    RunStatus,
    StepStatus,
)
from tests.fakes import (
    CANCEL,
    COMPENSATION,
    POLICY,
    STATUS,
    OrderArgs,
    RecordingSleep,
    fail,
    make_executor,
    make_run,
    resume,
    shop_like_tools,
)


async def test_complete_plan_runs_each_step_once_and_answers_from_observations() -> None:
    registry, scripts = shop_like_tools()
    executor, journal, _ = make_executor(registry)
    run = await executor.start(make_run([STATUS, COMPENSATION]))

    assert run.status is RunStatus.COMPLETED
    assert [s.status for s in run.steps] == [StepStatus.DONE, StepStatus.DONE]
    assert run.steps[0].observation["status"] == "shipping"
    assert len(scripts["get_order_status"].calls) == 1
    assert len(scripts["search_policy"].calls) == 1
    assert "on its way" in (run.answer or "")
    assert "3 days late: coupon." in (run.answer or "")
    assert journal.kinds() == [
        "run_planned",
        "step_started",
        "step_succeeded",
        "step_started",
        "step_succeeded",
        "run_finished",
    ]


async def test_delivered_order_skips_compensation_with_a_reason() -> None:
    registry, scripts = shop_like_tools(status=[{"order_id": "A1001", "status": "delivered"}])
    executor, journal, _ = make_executor(registry)
    run = await executor.start(make_run([STATUS, COMPENSATION]))

    assert run.status is RunStatus.COMPLETED
    assert run.steps[1].status is StepStatus.SKIPPED
    assert "delivered" in (run.steps[1].skip_reason or "")
    assert scripts["search_policy"].calls == []
    assert "step_skipped" in journal.kinds()
    assert run.steps[1].skip_reason in (run.answer or "")


async def test_unconditional_policy_question_is_not_skipped_when_delivered() -> None:
    registry, scripts = shop_like_tools(status=[{"order_id": "A1001", "status": "delivered"}])
    executor, _, _ = make_executor(registry)
    run = await executor.start(make_run([STATUS, POLICY]))
    assert run.steps[1].status is StepStatus.DONE
    assert len(scripts["search_policy"].calls) == 1


async def test_delivered_order_skips_cancel_and_suggests_a_return() -> None:
    registry, scripts = shop_like_tools(status=[{"order_id": "A1001", "status": "delivered"}])
    executor, _, _ = make_executor(registry)
    run = await executor.start(make_run([STATUS, CANCEL], language=Language.ZH))

    assert run.status is RunStatus.COMPLETED
    assert run.steps[1].status is StepStatus.SKIPPED
    assert "退货" in (run.steps[1].skip_reason or "")
    assert scripts["cancel_order"].calls == []


async def test_timeout_is_retried_with_growing_backoff_then_succeeds() -> None:
    timeout = fail(ErrorType.TIMEOUT, "upstream slow")
    registry, scripts = shop_like_tools(
        status=[timeout, timeout, {"order_id": "A1001", "status": "shipping"}]
    )
    executor, journal, sleep = make_executor(registry)
    run = await executor.start(make_run([STATUS, COMPENSATION]))

    assert run.status is RunStatus.COMPLETED
    assert run.steps[0].retry_count == 2
    assert len(scripts["get_order_status"].calls) == 3
    assert sleep.delays == [0.5, 1.0]  # rand=0.5 ⇒ no jitter offset
    retries = [e for e in journal.events if e.kind is EventKind.STEP_RETRYING]
    assert [(e.attempt, e.decision) for e in retries] == [(1, "retry"), (2, "retry")]
    assert "after 2 retries" in (run.answer or "")
    # The same idempotency key on every attempt.
    keys = {ctx.idempotency_key for _, ctx in scripts["get_order_status"].calls}
    assert keys == {"run1:s1"}


async def test_retries_exhausted_stops_without_running_later_steps() -> None:
    registry, scripts = shop_like_tools(status=[fail(ErrorType.TIMEOUT)])
    executor, journal, sleep = make_executor(registry)
    run = await executor.start(make_run([STATUS, COMPENSATION]))

    assert run.status is RunStatus.FAILED
    assert run.stop_reason == "timeout"
    assert run.steps[0].status is StepStatus.FAILED
    assert run.steps[0].retry_count == 2
    assert len(scripts["get_order_status"].calls) == 3
    assert len(sleep.delays) == 2
    assert scripts["search_policy"].calls == []
    assert run.steps[1].status is StepStatus.PENDING
    assert "retried 2 times" in (run.answer or "")
    assert "not done, because an earlier step did not complete" in (run.answer or "")


async def test_empty_policy_falls_back_to_an_honest_partial_answer() -> None:
    registry, _ = shop_like_tools(policy=[fail(ErrorType.EMPTY_RESULT, "no policy matched")])
    executor, journal, _ = make_executor(registry)
    run = await executor.start(make_run([STATUS, COMPENSATION]))

    assert run.status is RunStatus.COMPLETED
    assert run.steps[1].status is StepStatus.FALLBACK
    assert run.steps[1].fallback_reason == "no policy matched"
    answer = run.answer or ""
    assert "on its way" in answer  # what was found
    assert "no clear policy" in answer and "won't guess" in answer  # what was not
    assert "contact a human agent" in answer  # what to do next
    assert "step_fallback" in journal.kinds()


@pytest.mark.parametrize(
    "error_type",
    [
        ErrorType.NOT_FOUND,
        ErrorType.PERMISSION_DENIED,
        ErrorType.INVALID_ARGUMENTS,
        ErrorType.UNKNOWN_TOOL,
        ErrorType.INTERNAL,
    ],
)
async def test_non_retryable_failure_stops_at_once(error_type: ErrorType) -> None:
    registry, scripts = shop_like_tools(status=[fail(error_type)])
    executor, _, sleep = make_executor(registry)
    run = await executor.start(make_run([STATUS, COMPENSATION]))

    assert run.status is RunStatus.FAILED
    assert run.stop_reason == error_type.value
    assert len(scripts["get_order_status"].calls) == 1
    assert sleep.delays == []
    assert scripts["search_policy"].calls == []
    assert run.steps[0].error is not None and run.steps[0].error.type is error_type


async def test_unknown_tool_in_plan_stops_the_run() -> None:
    registry, _ = shop_like_tools()
    executor, _, _ = make_executor(registry)
    run = await executor.start(make_run([("refund_order", {"order_id": "A1001"}, None)]))
    assert run.status is RunStatus.FAILED
    assert run.steps[0].error is not None
    assert run.steps[0].error.type is ErrorType.UNKNOWN_TOOL


async def test_high_risk_step_pauses_before_the_tool_and_confirm_resumes_from_it() -> None:
    registry, scripts = shop_like_tools()
    executor, journal, _ = make_executor(registry)
    run = await executor.start(make_run([STATUS, CANCEL]))

    assert run.status is RunStatus.PAUSED
    assert run.steps[1].status is StepStatus.PAUSED
    assert scripts["cancel_order"].calls == []
    assert run.pause is not None and run.pause.step_id == "s2" and run.pause.nonce
    assert 'press "Yes, cancel A1001" or "No, keep it"' in (run.answer or "")

    run = await resume(executor, run, approved=True, by_user_id=10001)

    assert run.status is RunStatus.COMPLETED
    assert run.steps[1].status is StepStatus.DONE
    assert len(scripts["get_order_status"].calls) == 1  # never re-run
    assert len(scripts["cancel_order"].calls) == 1
    assert scripts["cancel_order"].calls[0][1].idempotency_key == "run1:s2"
    assert run.steps[1].approval is not None and run.steps[1].approval.by_user_id == 10001
    assert "has been cancelled" in (run.answer or "")
    assert journal.kinds()[-4:] == [
        "step_approved",
        "step_started",
        "step_succeeded",
        "run_finished",
    ]


async def test_declined_pause_cancels_the_run_and_changes_nothing() -> None:
    registry, scripts = shop_like_tools()
    executor, _, _ = make_executor(registry)
    run = await executor.start(make_run([STATUS, CANCEL]))
    run = await resume(executor, run, approved=False, by_user_id=10001)

    assert run.status is RunStatus.DECLINED
    assert run.steps[1].status is StepStatus.CANCELLED
    assert scripts["cancel_order"].calls == []
    assert len(scripts["get_order_status"].calls) == 1
    assert "Nothing was changed" in (run.answer or "")


async def test_resume_refuses_a_run_that_is_not_paused() -> None:
    registry, _ = shop_like_tools()
    executor, _, _ = make_executor(registry)
    run = await executor.start(make_run([STATUS]))
    with pytest.raises(ValueError, match="not waiting"):
        await resume(executor, run, approved=True, by_user_id=10001)


async def test_confirmation_required_from_a_tool_pauses_and_approval_runs_it_again() -> None:
    registry, scripts = shop_like_tools(
        policy=[
            fail(ErrorType.CONFIRMATION_REQUIRED, "needs consent"),
            [{"title": "t", "text": "x"}],
        ]
    )
    executor, _, _ = make_executor(registry)
    run = await executor.start(make_run([STATUS, POLICY]))
    assert run.status is RunStatus.PAUSED
    assert run.steps[1].pause_reason == "needs consent"

    run = await resume(executor, run, approved=True, by_user_id=10001)
    assert run.status is RunStatus.COMPLETED
    assert len(scripts["search_policy"].calls) == 2


async def test_confirmation_required_again_after_approval_stops_instead_of_looping() -> None:
    registry, scripts = shop_like_tools(policy=[fail(ErrorType.CONFIRMATION_REQUIRED)])
    executor, _, _ = make_executor(registry)
    run = await executor.start(make_run([STATUS, POLICY]))
    run = await resume(executor, run, approved=True, by_user_id=10001)
    assert run.status is RunStatus.FAILED
    assert len(scripts["search_policy"].calls) == 2


async def test_changed_arguments_after_pause_ask_again_instead_of_running() -> None:
    registry, scripts = shop_like_tools()
    executor, _, _ = make_executor(registry)
    run = await executor.start(make_run([STATUS, CANCEL]))
    assert run.pause is not None
    first_nonce = run.pause.nonce
    run.steps[1].args = {"order_id": "A9999"}  # not what the customer saw

    run = await resume(executor, run, approved=True, by_user_id=10001)

    assert run.status is RunStatus.PAUSED
    assert scripts["cancel_order"].calls == []
    assert run.pause is not None and run.pause.nonce != first_nonce
    assert run.steps[1].approval is None


async def test_max_steps_guard_counts_attempts_and_stops() -> None:
    registry, scripts = shop_like_tools(status=[fail(ErrorType.TIMEOUT)], max_retries=50)
    executor, _, _ = make_executor(registry)
    plan = make_run([STATUS, COMPENSATION], max_retries=50)
    plan.max_attempts = 4
    run = await executor.start(plan)

    assert run.status is RunStatus.FAILED
    assert run.stop_reason == "max_steps"
    assert len(scripts["get_order_status"].calls) == 4
    assert scripts["search_policy"].calls == []
    assert "more steps than allowed" in (run.answer or "")


async def test_paused_run_survives_json_and_resumes_in_a_fresh_executor() -> None:
    registry, scripts = shop_like_tools()
    executor, _, _ = make_executor(registry)
    paused = await executor.start(make_run([STATUS, CANCEL]))

    restored = Run.model_validate_json(paused.model_dump_json())
    assert restored == paused

    fresh_registry, fresh_scripts = shop_like_tools()
    fresh, _, _ = make_executor(fresh_registry)
    run = await resume(fresh, restored, approved=True, by_user_id=10001)

    assert run.status is RunStatus.COMPLETED
    assert fresh_scripts["get_order_status"].calls == []  # step 1 is not re-run
    assert len(fresh_scripts["cancel_order"].calls) == 1
    assert len(scripts["cancel_order"].calls) == 0


async def test_step_interrupted_while_running_is_acted_on_again_with_the_same_key() -> None:
    registry, scripts = shop_like_tools()
    executor, _, _ = make_executor(registry)
    run = make_run([STATUS, COMPENSATION])
    run.steps[0].status = StepStatus.RUNNING  # as a crash would leave it
    run = await executor.drive(run)
    assert run.status is RunStatus.COMPLETED
    assert [ctx.idempotency_key for _, ctx in scripts["get_order_status"].calls] == ["run1:s1"]


async def test_running_is_journaled_before_the_tool_is_called() -> None:
    seen: list[str] = []

    async def handler(args: BaseModel, ctx: ToolContext) -> dict[str, str]:
        seen.append(journal.events[-1].kind.value)
        return {"order_id": "A1001", "status": "shipping"}

    registry = ToolRegistry([Tool("get_order_status", "s", OrderArgs, handler)])
    executor, journal, _ = make_executor(registry)
    await executor.start(make_run([STATUS]))
    assert seen == ["step_started"]


async def test_a_failing_listener_never_stops_the_run() -> None:
    async def broken(run: Run, event: object) -> None:
        raise RuntimeError("telegram is down")

    registry, _ = shop_like_tools()
    executor, _, _ = make_executor(registry, listeners=[broken])
    run = await executor.start(make_run([STATUS, COMPENSATION]))
    assert run.status is RunStatus.COMPLETED


async def test_a_failing_journal_stops_before_any_tool_runs() -> None:
    class LockedJournal:
        async def record_many(self, run: Run, events: object) -> None:
            raise OSError("database is locked")

    registry, scripts = shop_like_tools()
    executor = Executor(registry, journal=LockedJournal())
    with pytest.raises(OSError):
        await executor.start(make_run([STATUS]))
    assert scripts["get_order_status"].calls == []


async def test_per_tool_policy_override_turns_a_timeout_into_a_stop() -> None:
    registry, scripts = shop_like_tools(status=[fail(ErrorType.TIMEOUT)])
    strict = ToolRegistry(
        [
            Tool(
                "get_order_status",
                "s",
                OrderArgs,
                scripts["get_order_status"],
                policy={ErrorType.TIMEOUT: FailurePolicy().table[ErrorType.NOT_FOUND]},
            )
        ]
    )
    executor, _, sleep = make_executor(strict)
    run = await executor.start(make_run([STATUS]))
    assert run.status is RunStatus.FAILED
    assert len(scripts["get_order_status"].calls) == 1
    assert sleep.delays == []


def test_backoff_grows_exponentially_is_capped_and_jittered() -> None:
    backoff = Backoff(base_s=0.5, factor=2.0, cap_s=4.0, jitter=0.25)
    assert [backoff.delay(n, lambda: 0.5) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert backoff.delay(2, lambda: 0.0) == pytest.approx(0.75)
    assert backoff.delay(2, lambda: 1.0) == pytest.approx(1.25)
    assert backoff.delay(9, lambda: 1.0) == 4.0  # jitter never exceeds the cap


def test_policy_table_matches_the_seed() -> None:
    policy = FailurePolicy()
    decide = lambda e: policy.decide(e, retry_count=0, max_retries=2).value  # noqa: E731
    assert decide(ErrorType.TIMEOUT) == "retry"
    assert decide(ErrorType.EMPTY_RESULT) == "fallback"
    assert decide(ErrorType.CONFIRMATION_REQUIRED) == "pause"
    for stop in ("not_found", "invalid_arguments", "unknown_tool", "permission_denied"):
        assert decide(ErrorType(stop)) == "stop"
    assert policy.decide(ErrorType.TIMEOUT, retry_count=2, max_retries=2).value == "stop"


async def test_registry_validates_arguments_and_names_the_field() -> None:
    registry, scripts = shop_like_tools()
    ctx = ToolContext(user_id=1, trace_id="t", run_id="r", step_id="s1")
    result = await registry.call("get_order_status", {"order": "A1001"}, ctx)
    assert not result.ok and result.error_type is ErrorType.INVALID_ARGUMENTS
    assert "order_id" in result.message
    assert scripts["get_order_status"].calls == []


async def test_registry_turns_a_slow_tool_into_a_timeout() -> None:
    never = asyncio.Event()

    async def hang(args: BaseModel, ctx: ToolContext) -> None:
        await never.wait()

    registry = ToolRegistry([Tool("slow", "s", OrderArgs, hang, timeout_s=0.01)])
    ctx = ToolContext(user_id=1, trace_id="t", run_id="r", step_id="s1")
    result = await registry.call("slow", {"order_id": "A1"}, ctx)
    assert not result.ok and result.error_type is ErrorType.TIMEOUT


async def test_registry_turns_an_unexpected_exception_into_a_structured_error() -> None:
    async def boom(args: BaseModel, ctx: ToolContext) -> None:
        raise KeyError("secret internals")

    registry = ToolRegistry([Tool("boom", "b", OrderArgs, boom)])
    ctx = ToolContext(user_id=1, trace_id="t", run_id="r", step_id="s1")
    result = await registry.call("boom", {"order_id": "A1"}, ctx)
    assert not result.ok and result.error_type is ErrorType.INTERNAL
    assert "secret internals" not in result.message
    unknown = await registry.call("nope", {}, ctx)
    assert not unknown.ok and unknown.error_type is ErrorType.UNKNOWN_TOOL


# -- commit points: what is durable when --------------------------------------------------


class TransactionJournal:
    """A group journal that records which events were committed in which transaction."""

    def __init__(self) -> None:
        self.transactions: list[list[str]] = []
        self.committed: list[RunEvent] = []
        self.fail_on: EventKind | None = None

    async def record_many(self, run: Run, events: Sequence[RunEvent]) -> None:
        await asyncio.sleep(0)  # a commit takes time; other coroutines may run meanwhile
        if self.fail_on is not None and any(e.kind is self.fail_on for e in events):
            raise OSError("disk went away")
        self.transactions.append([_label(e) for e in events])
        self.committed.extend(events)

    def last(self) -> list[str]:
        return self.transactions[-1] if self.transactions else []


def _label(event: RunEvent) -> str:
    return f"{event.kind.value}:{event.step_id}" if event.step_id else event.kind.value


def committed_executor(
    registry: ToolRegistry, **kwargs: Any
) -> tuple[Executor, TransactionJournal, list[str]]:
    """An executor on a TransactionJournal, with a listener that checks every event it is
    told about is already committed (and in the order of the commits)."""
    journal = TransactionJournal()
    told: list[str] = []

    async def listener(run: Run, event: RunEvent) -> None:
        assert any(e is event for e in journal.committed), f"told before commit: {event}"
        told.append(_label(event))

    executor = Executor(
        registry,
        journal=journal,
        listeners=[listener],
        sleep=RecordingSleep(),
        rand=lambda: 0.5,
        **kwargs,
    )
    return executor, journal, told


def recording_tools(
    journal_of: Callable[[], TransactionJournal], **outcomes: Any
) -> tuple[ToolRegistry, dict[str, Any], list[tuple[str, list[str]]]]:
    """shop_like_tools whose calls note the last committed transaction at call time."""
    registry, scripts = shop_like_tools(**outcomes)
    seen: list[tuple[str, list[str]]] = []
    tools = []
    for name, script in scripts.items():
        original = registry.get(name)
        assert original is not None

        async def handler(args: BaseModel, ctx: ToolContext, script: Any = script) -> Any:
            seen.append((ctx.step_id, list(journal_of().last())))
            return await script(args, ctx)

        tools.append(dataclasses.replace(original, handler=handler))
    return ToolRegistry(tools), scripts, seen


async def test_standard_cancel_run_commits_five_times_and_tools_wait_for_their_running_row() -> (
    None
):
    holder: list[TransactionJournal] = []
    registry, scripts, seen = recording_tools(lambda: holder[0])
    executor, journal, told = committed_executor(registry)
    holder.append(journal)

    run = await executor.start(make_run([STATUS, POLICY, CANCEL]))
    assert run.status is RunStatus.PAUSED
    run = await resume(executor, run, approved=True, by_user_id=10001)
    assert run.status is RunStatus.COMPLETED

    # (c) 11 transitions, 5 commits (the claim, storage's own transaction, makes a 6th).
    assert journal.transactions == [
        ["run_planned", "step_started:s1"],
        ["step_succeeded:s1", "step_started:s2"],
        ["step_succeeded:s2", "step_paused:s3"],
        ["step_approved:s3", "step_started:s3"],
        ["step_succeeded:s3", "run_finished"],
    ]
    # (a) every tool call came after a commit that ends with its own running row.
    assert seen == [
        ("s1", ["run_planned", "step_started:s1"]),
        ("s2", ["step_succeeded:s1", "step_started:s2"]),
        ("s3", ["step_approved:s3", "step_started:s3"]),
    ]
    assert len(scripts["cancel_order"].calls) == 1
    # (b) listeners were told everything, in commit order, each only once committed.
    assert told == [label for tx in journal.transactions for label in tx]


async def test_retry_is_committed_before_the_backoff_and_listeners_only_see_commits() -> None:
    journal_ref: list[TransactionJournal] = []
    registry, _, seen = recording_tools(
        lambda: journal_ref[0],
        status=[fail(ErrorType.TIMEOUT), {"order_id": "A1001", "status": "delivered"}],
    )
    waits: list[list[str]] = []

    async def sleep(seconds: float) -> None:
        waits.append(list(journal_ref[0].last()))

    executor, journal, told = committed_executor(registry)
    executor._sleep = sleep
    journal_ref.append(journal)
    run = await executor.start(make_run([STATUS, COMPENSATION, CANCEL]))

    assert run.status is RunStatus.COMPLETED  # delivered: compensation and cancel skipped
    assert waits == [["step_retrying:s1"]]
    assert journal.transactions == [
        ["run_planned", "step_started:s1"],
        ["step_retrying:s1"],
        ["step_started:s1"],
        ["step_succeeded:s1", "step_skipped:s2", "step_skipped:s3", "run_finished"],
    ]
    assert [s for s, _ in seen] == ["s1", "s1"]
    assert all(tx[-1] == f"step_started:{step}" for step, tx in seen)
    assert told == [label for tx in journal.transactions for label in tx]


async def test_failure_decline_and_fallback_ride_along_with_the_next_commit() -> None:
    registry, _ = shop_like_tools(policy=[fail(ErrorType.EMPTY_RESULT, "nothing found")])
    executor, journal, told = committed_executor(registry)
    run = await executor.start(make_run([STATUS, POLICY]))
    assert run.status is RunStatus.COMPLETED
    assert journal.transactions[-1] == ["step_fallback:s2", "run_finished"]

    registry, _ = shop_like_tools(status=[fail(ErrorType.NOT_FOUND)])
    executor, journal, told = committed_executor(registry)
    run = await executor.start(make_run([STATUS, POLICY]))
    assert run.status is RunStatus.FAILED
    assert journal.transactions[-1] == ["step_failed:s1", "run_finished"]

    registry, scripts = shop_like_tools()
    executor, journal, told = committed_executor(registry)
    run = await executor.start(make_run([STATUS, CANCEL]))
    run = await resume(executor, run, approved=False, by_user_id=10001)
    assert run.status is RunStatus.DECLINED
    assert journal.transactions[-1] == ["step_declined:s2", "run_finished"]
    assert scripts["cancel_order"].calls == []
    assert told == [label for tx in journal.transactions for label in tx]

    executor, journal, told = committed_executor(registry)
    refused = make_run([])
    run = await executor.start(refused)
    assert journal.transactions == [["run_planned", "run_finished"]]
    assert told == ["run_planned", "run_finished"]


async def test_a_failed_commit_tells_nobody_and_calls_no_tool() -> None:
    holder: list[TransactionJournal] = []
    registry, scripts, seen = recording_tools(lambda: holder[0])
    executor, journal, told = committed_executor(registry)
    holder.append(journal)
    journal.fail_on = EventKind.STEP_STARTED
    with pytest.raises(OSError):
        await executor.start(make_run([STATUS, POLICY]))
    assert seen == [] and told == [] and journal.transactions == []
    # Nothing left behind for the next run: its first commit holds only its own transitions.
    journal.fail_on = None
    await executor.start(make_run([STATUS]))
    assert journal.transactions[0] == ["run_planned", "step_started:s1"]


async def test_the_recording_journal_hears_every_transition_before_the_listeners() -> None:
    registry, _ = shop_like_tools()
    executor, journal, _ = make_executor(registry)
    told: list[str] = []

    async def listener(run: Run, event: RunEvent) -> None:
        assert any(e is event for e in journal.events)  # recorded before it is told
        told.append(event.kind.value)

    executor.listeners.append(listener)
    await executor.start(make_run([STATUS, COMPENSATION]))
    assert told == journal.kinds() and len(told) == 6


async def test_an_expired_pause_is_committed_and_told_like_any_run_end() -> None:
    registry, scripts = shop_like_tools()
    executor, journal, told = committed_executor(registry)
    run = await executor.start(make_run([STATUS, CANCEL]))
    assert run.status is RunStatus.PAUSED

    run = await executor.expire(run)

    assert run.status is RunStatus.EXPIRED and run.pause is None
    assert run.steps[1].status is StepStatus.CANCELLED
    assert journal.transactions[-1] == ["run_finished"]
    assert journal.committed[-1].message == "approval expired"
    assert journal.committed[-1].status == "expired"
    assert told == [label for tx in journal.transactions for label in tx]
    assert scripts["cancel_order"].calls == []


def test_transitions_assign_fields_as_pydantic_would() -> None:
    """The transitions write fields past pydantic's `__setattr__` (`transitions._assign`):
    the same values and the same `model_fields_set`, which holds only while the models
    neither validate assignment nor are frozen."""
    for model in (Run, PlanStep):
        assert not model.model_config.get("validate_assignment")
        assert not model.model_config.get("frozen")
    now = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    fast = make_run([STATUS, CANCEL])
    slow = fast.model_copy(deep=True)
    transitions.start_step(fast, fast.steps[0], now=now)
    transitions.succeed(fast, fast.steps[0], {"status": "shipped"}, attempt=1, now=now)
    slow.attempts += 1
    slow.status = RunStatus.RUNNING
    slow.steps[0].status = StepStatus.RUNNING
    slow.steps[0].started_at = now
    slow.updated_at = now
    slow.steps[0].status = StepStatus.DONE
    slow.steps[0].observation = {"status": "shipped"}
    slow.steps[0].error = None
    slow.steps[0].finished_at = now
    assert fast == slow
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.steps[0].model_fields_set == slow.steps[0].model_fields_set


def test_events_made_without_validation_equal_validated_ones() -> None:
    """`transitions.event` makes its `RunEvent` without validating (`_new_event`): the same
    model, dump and `model_fields_set` as `RunEvent(...)` of the same values, for a run-level
    and a step-level event, every optional field set or not, an int delay included."""
    now = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    run = make_run([STATUS, CANCEL])
    cases: list[dict[str, Any]] = [
        {},
        {"attempt": 2, "error_type": ErrorType.TIMEOUT, "decision": Decision.RETRY},
        {"delay_s": 2, "message": "slow", "status": "paused"},
        {"delay_s": 0.25},
    ]
    for step in (None, run.steps[0]):
        for extra in cases:
            made = transitions.event(run, EventKind.STEP_RETRYING, step, now=now, **extra)
            status = extra.get("status") or (step or run).status.value
            checked = RunEvent(
                kind=EventKind.STEP_RETRYING,
                run_id=run.id,
                trace_id=run.trace_id,
                step_id=step.id if step else None,
                tool=step.tool if step else None,
                attempt=extra.get("attempt"),
                status=status,
                error_type=extra.get("error_type"),
                decision=extra.get("decision"),
                delay_s=extra.get("delay_s"),
                message=extra.get("message"),
                at=now,
            )
            assert made == checked
            assert made.model_dump() == checked.model_dump()
            assert list(vars(made)) == list(vars(checked))
            assert type(made.delay_s) is type(checked.delay_s)
            assert made.model_fields_set == checked.model_fields_set == set(RunEvent.model_fields)
            assert repr(made) == repr(checked)
