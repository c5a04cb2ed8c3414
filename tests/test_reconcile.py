"""Issue 20 item 2, in the executor: a change that may have reached a backend which ignores
idempotency keys is reconciled by a read, never re-sent blindly. Scripted tools, no waiting;
the same over real HTTP against a WooCommerce-shaped shop is in test_http_woocommerce.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_core.catalog.builtin import CANCEL_ORDER
from agent_core.execution.policy import AfterReconcile, Verdict, after_reconcile, reconciles
from agent_core.execution.tools import (
    DEFAULT_SETTLE_S,
    Tool,
    ToolContext,
    ToolFailure,
    ToolRegistry,
)
from agent_core.models import (
    Approval,
    ErrorType,
    Idempotency,
    Language,
    Risk,
    RunStatus,
    StepStatus,
    utcnow,
)
from tests.fakes import CANCEL, STATUS, Script, make_executor, make_run, resume

CANCELLED = {"order_id": "A1001", "status": "cancelled"}
PENDING = {"order_id": "A1001", "status": "pending", "eta": None, "items": []}


def lost(error_type: ErrorType = ErrorType.TIMEOUT, *, sent: bool | None = None) -> ToolFailure:
    """A failure after which the cancel may (sent=None/True) or surely not (False) have
    reached the backend."""
    return ToolFailure(error_type, "no answer from upstream: ReadTimeout", may_have_happened=sent)


class Reads:
    """A scripted reconcile read: data (happened), None (not), or a ToolFailure (cannot tell)."""

    def __init__(self, *outcomes: Any) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[ToolContext] = []

    async def __call__(self, args: Any, ctx: ToolContext) -> Any:
        self.calls.append(ctx)
        outcome = self.outcomes[min(len(self.calls) - 1, len(self.outcomes) - 1)]
        if isinstance(outcome, ToolFailure):
            raise outcome
        return outcome


def tools(
    cancel: list[Any],
    reads: Reads | None,
    idempotency: Idempotency = Idempotency.IGNORED,
) -> tuple[ToolRegistry, Script]:
    script = Script(cancel)
    status = Script([PENDING])
    registry = ToolRegistry(
        [
            Tool("get_order_status", "s", CANCEL_ORDER.args_model, status),
            Tool.of(CANCEL_ORDER, script, idempotency=idempotency, reconcile=reads),
        ]
    )
    return registry, script


async def confirmed(registry: ToolRegistry, language: Language = Language.EN) -> Any:
    executor, journal, sleep = make_executor(registry)
    paused = await executor.start(make_run([STATUS, CANCEL], language=language))
    assert paused.status is RunStatus.PAUSED
    run = await resume(executor, paused, approved=True, by_user_id=paused.user_id)
    return run, journal, sleep


def test_only_a_change_in_doubt_at_a_backend_ignoring_keys_is_reconciled() -> None:
    ignored, honoured = Idempotency.IGNORED, Idempotency.HONOURED
    assert reconciles(risk=Risk.HIGH, idempotency=ignored, may_have_happened=True)
    assert not reconciles(risk=Risk.HIGH, idempotency=ignored, may_have_happened=False)
    assert not reconciles(risk=Risk.HIGH, idempotency=honoured, may_have_happened=True)
    assert not reconciles(risk=Risk.READ, idempotency=ignored, may_have_happened=True)
    assert after_reconcile(Verdict.HAPPENED, retry_count=2, max_retries=2) is AfterReconcile.DONE
    assert after_reconcile(Verdict.NOT_HAPPENED, retry_count=0, max_retries=2) is (
        AfterReconcile.RETRY
    )
    assert after_reconcile(Verdict.NOT_HAPPENED, retry_count=2, max_retries=2) is (
        AfterReconcile.STOP
    )
    assert after_reconcile(Verdict.UNDECIDED, retry_count=0, max_retries=2) is (
        AfterReconcile.UNKNOWN_OUTCOME
    )


async def test_a_change_that_happened_is_done_with_what_the_read_saw_and_not_resent() -> None:
    reads = Reads(CANCELLED)
    registry, cancel = tools([lost(), CANCELLED], reads)
    run, journal, sleep = await confirmed(registry)

    assert run.status is RunStatus.COMPLETED
    assert len(cancel.calls) == 1 and len(reads.calls) == 1
    assert reads.calls[0].idempotency_key == cancel.calls[0][1].idempotency_key
    assert run.steps[1].observation == CANCELLED
    assert run.answer == "Order A1001 has been cancelled."
    assert sleep.delays == []
    assert "step_reconciled" in journal.kinds() and "step_retrying" not in journal.kinds()


async def test_a_change_that_did_not_happen_is_sent_again() -> None:
    registry, cancel = tools([lost(ErrorType.UNAVAILABLE), CANCELLED], Reads(None))
    run, journal, _ = await confirmed(registry)

    assert run.status is RunStatus.COMPLETED
    assert len(cancel.calls) == 2
    kinds = journal.kinds()
    assert kinds.index("step_reconciled") < kinds.index("step_retrying")


async def test_a_change_nobody_can_decide_is_an_unknown_outcome_flagged_for_staff() -> None:
    reads = Reads(ToolFailure(ErrorType.TIMEOUT, "read timed out too"))
    for language, words in (
        (Language.EN, ("may already have been done; we are checking", "Please don't send it")),
        (Language.ZH, ("可能已经完成，我们正在核实", "请不要重复提交")),
    ):
        registry, cancel = tools([lost(), CANCELLED], reads)
        run, journal, _ = await confirmed(registry, language)

        assert len(cancel.calls) == 1  # never sent again
        assert run.status is RunStatus.FAILED and run.stop_reason == "unknown_outcome"
        step = run.steps[1]
        assert step.status is StepStatus.FAILED and step.error is not None
        assert step.error.type is ErrorType.UNKNOWN_OUTCOME
        assert all(word in (run.answer or "") for word in words), run.answer
        (flag,) = [e for e in journal.events if e.kind.value == "notice"]
        assert "unknown outcome" in (flag.message or "") and "read timed out too" in (
            flag.message or ""
        )


async def test_no_reconcile_read_means_unknown_outcome_not_a_blind_retry() -> None:
    registry, cancel = tools([lost(), CANCELLED], None)
    run, _, _ = await confirmed(registry)
    assert len(cancel.calls) == 1
    assert run.stop_reason == "unknown_outcome"


async def test_a_request_that_never_left_is_retried_without_a_read() -> None:
    reads = Reads(CANCELLED)
    registry, cancel = tools([lost(ErrorType.UNAVAILABLE, sent=False), CANCELLED], reads)
    run, _, _ = await confirmed(registry)
    assert run.status is RunStatus.COMPLETED
    assert len(cancel.calls) == 2 and reads.calls == []


async def test_a_backend_honouring_keys_is_retried_as_before() -> None:
    reads = Reads(CANCELLED)
    registry, cancel = tools([lost(), CANCELLED], reads, Idempotency.HONOURED)
    run, _, _ = await confirmed(registry)
    assert run.status is RunStatus.COMPLETED
    assert len(cancel.calls) == 2 and reads.calls == []


@pytest.mark.parametrize(("found", "calls"), [(CANCELLED, 0), (None, 1)])
async def test_a_change_a_crash_interrupted_is_reconciled_before_it_is_sent(
    found: Any, calls: int
) -> None:
    reads = Reads(found)
    registry, cancel = tools([CANCELLED], reads)
    executor, _, sleep = make_executor(registry)
    run = make_run([CANCEL])
    step = run.steps[0]
    step.approval = Approval(approved=True, by_user_id=run.user_id, at=utcnow())
    step.status = StepStatus.RUNNING  # as a crash mid-call leaves it
    run = await executor.drive(run)

    assert run.status is RunStatus.COMPLETED
    assert len(cancel.calls) == calls
    if found is not None:
        assert len(reads.calls) == 1 and sleep.delays == []
    else:
        # When the call went out is not known after a restart: "not there" is believed
        # only after a whole settle time from now, read again and again meanwhile (the
        # last delay is the retry's own backoff).
        assert len(reads.calls) > 1
        assert sum(sleep.delays[:-1]) == pytest.approx(DEFAULT_SETTLE_S)
