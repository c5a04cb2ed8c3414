"""Plan → next step → act → observe → update plan → … → answer.

One pending step at a time. The executor decides which transition comes next; what a
transition does to the run is `agent_core.execution.transitions`. Transitions go to the journal
(durable storage, `Journal.record_many`) and then to the listeners (progress messages),
whose failures never stop a run. A transition is told to the listeners only once it is
durable, so a customer is never shown a state that a crash could take back. An expired
pause (`expire`) ends its run through the same commit and listeners.

A high-risk step pauses *before* its tool runs. The run resumes from that step once the
customer's decision is written on it (`step.approval`, by the store's claim) and `drive`
is called, so earlier steps never run again.

Commit points
-------------
Not every transition needs its own commit. These must be durable before the executor
moves on (`COMMIT_POINTS`):

* `step_started` — a step is durable as `running`, with its attempt, BEFORE its tool is
  called: after a crash, recovery sees which step was in flight and calls it again with
  the same idempotency key (`run_id:step_id`).
* `step_retrying` — before the backoff wait.
* `step_paused` — before the Confirm/Cancel buttons are shown (the buttons carry the
  pause's nonce; a press must find it in the database).
* `run_finished` — before the answer is shown.

Every other transition (`run_planned`, `step_succeeded`, `step_failed`, `step_fallback`,
`step_skipped`, `step_approved`, `step_declined`) waits in memory and is committed in the
same transaction as the run's next commit point: "s1 succeeded + s2 started" is one
commit, "s3 succeeded + run finished" another. Its listener notifications wait too and
are delivered, in order, right after that commit. The waiting transitions belong to one
drive (`start` or `drive` makes a `_Batch` and drops it when it returns or raises), so a
failed commit leaves nothing behind for a later drive. A standard run (status → policy →
pause → confirm → cancel → answer) makes 11 transitions in 6 commits (5 by the executor,
1 by the claim) instead of 11.

Crash analysis: a crash can now lose transitions that were not yet committed; none of
them was shown to anyone, and recovery (`drive` on the runs left `running`) converges:

* lost `run_planned`: it rides with the first `step_started` (or, for a plan with no
  steps, with `run_finished`), before which no tool ran and nothing was shown; the run
  does not exist, as if the crash had come before planning (the customer's message is
  handled like any message lost before planning).
* lost `step_succeeded` (and the `step_skipped` it caused) of a read step: the step is
  still `running` in the database, so recovery calls the tool again (same key) and skips
  again from the new observation. A read twice is harmless.
* lost `step_succeeded` of a side-effecting step (`cancel_order`): the step is `running`
  with its approval; recovery re-issues the call with the same idempotency key and the
  backend replays the first result (the demo shop records the key in the same
  transaction as the cancellation), so the order is still cancelled once. The same
  window existed before (between the tool's return and its own commit); it is now longer.
* lost `step_fallback`: the step is re-run, then falls back (or succeeds) again.
* lost `step_failed`: it commits together with `run_finished`, so both are lost; the
  step is re-run and the run ends by its new outcome. The customer saw neither. When the
  run goes on with the steps that do not depend on it (`dependencies`), the failure and
  the `step_skipped` of its dependents ride with the next `step_started`: lost together,
  the step is re-run and fails (or not) again, and its dependents are still pending.
* lost `step_approved` / `step_declined`: the decision itself was committed by the claim
  (`decision_claimed`, with `approval` on the step), so recovery applies it again.
A transition that must never be lost gets its own commit point; the claim (one press wins)
is storage's own transaction and is not affected.

Writes to a backend that ignores idempotency keys (issue 20)
------------------------------------------------------------
The replay argument above holds only for a backend that honours the key. For one that
ignores it (`Tool.idempotency`), a failed attempt that may have reached it, and a step a
crash left `running` (its call may have arrived), are reconciled (`_reconcile`): the
tool's reconcile read decides, and `agent_core.execution.policy.after_reconcile` says what follows —
done with what the read saw, sent again (it is not there), or stopped as
`unknown_outcome` without sending. The read is harmless to repeat, so `step_reconciled`
rides with the next commit point like `step_succeeded`: a crash before it reconciles again.
A read that finds nothing is believed only once the tool's `settle_s` has passed since the
send (`_settled_read`; after a restart the send time is unknown, so it counts from the
restart): until then the first request may still be in flight, and re-sending it would make
the change twice (issue 36: a shop that took 4 s to refund, under a 2 s timeout, refunded
twice).
"""

from __future__ import annotations

import asyncio
import logging
import random
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Protocol

from agent_core.catalog.builtin import rules_of
from agent_core.execution import transitions
from agent_core.execution.approval import StaffRule, needed_approval
from agent_core.execution.policy import (
    AfterReconcile,
    FailurePolicy,
    Verdict,
    after_reconcile,
    reconciles,
)
from agent_core.execution.rules import SkipRule, update_plan
from agent_core.execution.tools import Reconciliation, Tool, ToolContext, ToolRegistry
from agent_core.logcontext import log_fields
from agent_core.models import (
    SERVER_ERROR_CODE,
    Decision,
    ErrorType,
    EventKind,
    PlanStep,
    Risk,
    Run,
    RunEvent,
    RunStatus,
    StepStatus,
    ToolError,
    ToolOk,
    utcnow,
)

log = logging.getLogger(__name__)

MAX_STEPS_REASON = transitions.MAX_STEPS_REASON

# The transitions that are committed before the executor moves on (see "Commit points").
COMMIT_POINTS = frozenset(
    {
        EventKind.STEP_STARTED,
        EventKind.STEP_RETRYING,
        EventKind.STEP_PAUSED,
        EventKind.RUN_FINISHED,
    }
)


class Journal(Protocol):
    """Durable record of transitions."""

    async def record_many(self, run: Run, events: Sequence[RunEvent]) -> None:
        """Commit `events` (in order) and the run's current state atomically; return once
        durable. A failure means none of them is committed."""
        ...


class Listener(Protocol):
    async def __call__(self, run: Run, event: RunEvent) -> None: ...


class NullJournal:
    """For runs nobody needs to replay (unit tests, dry runs)."""

    async def record_many(self, run: Run, events: Sequence[RunEvent]) -> None:
        return None


@dataclass
class _Batch:
    """One drive of one run: its transitions waiting for the next commit point, in order.

    Made by `start`/`drive` and dropped when they return or raise, so nothing uncommitted
    outlives the drive, and two drives (even of copies of one run) never share a buffer.
    """

    run: Run
    pending: list[RunEvent] = field(default_factory=list)


class Executor:
    def __init__(
        self,
        registry: ToolRegistry,
        *,
        journal: Journal | None = None,
        listeners: Sequence[Listener] = (),
        policy: FailurePolicy | None = None,
        rules: Sequence[SkipRule] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], datetime] = utcnow,
        rand: Callable[[], float] = random.random,
        new_nonce: Callable[[], str] = lambda: secrets.token_urlsafe(8),
        staff_rule: StaffRule | None = None,
    ) -> None:
        self.registry = registry
        # Staff approval (issue 14): which high-risk calls staff decide instead.
        self.staff_rule = staff_rule
        self.journal: Journal = journal or NullJournal()
        self.listeners = list(listeners)
        self.policy = policy or FailurePolicy()
        # The catalog in use words the answers; its observation rules update the plans.
        self.catalog = registry.catalog()
        self.rules = rules if rules is not None else rules_of(self.catalog.values())
        self._sleep = sleep
        self._clock = clock
        self._rand = rand
        self._new_nonce = new_nonce

    async def start(self, run: Run) -> Run:
        """Record a freshly planned run and drive it to an answer or a pause."""
        with log_fields(run_id=run.id, trace_id=run.trace_id, chat_id=run.chat_id):
            return await self._start(run)

    async def _start(self, run: Run) -> Run:
        batch = _Batch(run)
        await self._emit(batch, transitions.planned(run, now=self._clock()))
        invalid = self._first_invalid(run)
        if invalid is not None:
            step, error = invalid
            await self._emit(
                batch,
                *transitions.reject_plan(run, step, error, now=self._clock(), catalog=self.catalog),
            )
        elif not run.steps:
            status = run.end_without_steps()
            if status is RunStatus.FAILED:
                run.stop_reason = run.refusal
            await self._emit(
                batch, transitions.finish(run, status, now=self._clock(), catalog=self.catalog)
            )
        else:
            await self._drive(batch)
        await self._settle(batch)
        return run

    def _first_invalid(self, run: Run) -> tuple[PlanStep, ToolError] | None:
        """The first step whose arguments its tool refuses: checked before anything runs,
        so a bad amount or address never reaches a backend, nor a Confirm prompt."""
        for step in run.steps:
            error = self.registry.check_args(step.tool, step.args)
            if error is not None and error.error_type is ErrorType.INVALID_ARGUMENTS:
                return step, error
        return None

    async def drive(self, run: Run) -> Run:
        """Act on pending steps until the plan is done, stops, or waits for the customer.

        Also the recovery entry point: a step left `running` by a crash is acted on again
        with the same idempotency key; and how a decision continues: once the claim has
        written it on the paused step (`step.approval`), `drive` carries it out.
        """
        with log_fields(run_id=run.id, trace_id=run.trace_id, chat_id=run.chat_id):
            batch = _Batch(run)
            await self._drive(batch)
            await self._settle(batch)
        return run

    async def expire(self, run: Run) -> Run:
        """End a run whose pause the store found expired (see `transitions.expire`).

        Committed and announced like any other end of a run.
        """
        with log_fields(run_id=run.id, trace_id=run.trace_id, chat_id=run.chat_id):
            expired = transitions.expire(run, now=self._clock(), catalog=self.catalog)
            await self._commit(run, [expired])
        return run

    async def _commit(self, run: Run, events: Sequence[RunEvent]) -> None:
        """Make `events` durable in one transaction, then (only then) tell the listeners."""
        await self.journal.record_many(run, events)
        for event in events:
            for listener in self.listeners:
                try:
                    await listener(run, event)
                except Exception:
                    log.exception(
                        "listener failed on %s", event.kind.value, extra={"trace_id": run.trace_id}
                    )

    async def _settle(self, batch: _Batch) -> None:
        """Commit transitions still waiting when the executor stops driving the run.

        Every way out of `_drive` ends at a commit point, so there are none; this keeps it
        that way should a new path forget to.
        """
        if batch.pending:
            events, batch.pending = batch.pending, []
            await self._commit(batch.run, events)

    async def _emit(self, batch: _Batch, *events: RunEvent) -> None:
        """Queue `events`; at a commit point, commit them with everything queued before."""
        for event in events:
            batch.pending.append(event)
            if event.kind in COMMIT_POINTS:
                pending, batch.pending = batch.pending, []
                await self._commit(batch.run, pending)

    async def _drive(self, batch: _Batch) -> None:
        run = batch.run
        if run.is_terminal:
            return
        while True:
            step = run.next_step()
            if step is None:
                # A failure that stopped only what depended on it leaves the run failed.
                failed = any(s.status is StepStatus.FAILED for s in run.steps)
                status = RunStatus.FAILED if failed else RunStatus.COMPLETED
                await self._emit(
                    batch, transitions.finish(run, status, now=self._clock(), catalog=self.catalog)
                )
                return
            if step.status is StepStatus.PAUSED:
                if step.approval is None:
                    run.status = RunStatus.PAUSED
                    return
                if transitions.approval_is_stale(run, step):
                    # What would run is not what the customer approved: ask again.
                    await self._emit(
                        batch,
                        transitions.ask_again(
                            run,
                            step,
                            nonce=self._new_nonce(),
                            now=self._clock(),
                            catalog=self.catalog,
                        ),
                    )
                    return
                await self._emit(
                    batch,
                    *transitions.apply_decision(run, step, now=self._clock(), catalog=self.catalog),
                )
                if run.status is not RunStatus.RUNNING:
                    return
                continue
            tool = self.registry.get(step.tool)
            if tool is not None and tool.risk is Risk.HIGH and step.approval is None:
                event = transitions.pause(
                    run,
                    step,
                    reason="high_risk",
                    nonce=self._new_nonce(),
                    now=self._clock(),
                    catalog=self.catalog,
                    approver=needed_approval(step.args, self.staff_rule).decider.value,
                )
                await self._emit(batch, event)
                return
            if run.attempts >= run.max_attempts:
                await self._emit(
                    batch,
                    transitions.stop_at_max_steps(run, now=self._clock(), catalog=self.catalog),
                )
                return
            if step.status is StepStatus.RUNNING and _reconciled_on_recovery(tool):
                # A crash interrupted this call; it may have reached a backend that would
                # do it again: a read decides before anything is sent.
                interrupted = ToolError(
                    error_type=ErrorType.UNAVAILABLE,
                    message="interrupted mid-call (recovered after a restart)",
                    may_have_happened=True,
                )
                if not await self._reconcile(
                    batch, step, interrupted, attempt=step.retry_count + 1
                ):
                    return
                continue
            if not await self._act(batch, step):
                return

    def _ctx(self, run: Run, step: PlanStep) -> ToolContext:
        return ToolContext(
            user_id=run.user_id, trace_id=run.trace_id, run_id=run.id, step_id=step.id
        )

    async def _succeed(
        self, batch: _Batch, step: PlanStep, result: ToolOk, *, attempt: int
    ) -> None:
        """The step is done with `result`: its notes, and the steps its observation skips."""
        run = batch.run
        now = self._clock()
        await self._emit(
            batch, transitions.succeed(run, step, result.data, attempt=attempt, now=now)
        )
        for note in result.notes:
            await self._emit(batch, transitions.noticed(run, step, note, now=self._clock()))
        for skipped in update_plan(run, self.rules):
            await self._emit(batch, transitions.skipped(run, skipped, now=self._clock()))

    async def _retry(self, batch: _Batch, step: PlanStep, error: ToolError, attempt: int) -> None:
        """Back off (durably recorded first), then the step is pending again."""
        delay = self.policy.backoff.delay(step.retry_count + 1, self._rand)
        await self._emit(
            batch,
            transitions.retry(
                batch.run, step, error, attempt=attempt, delay_s=delay, now=self._clock()
            ),
        )
        await self._sleep(delay)

    async def _settled_read(
        self, run: Run, step: PlanStep, sent_at: datetime | None
    ) -> Reconciliation:
        """The reconcile read, repeated with backoff until it finds the change or the tool's
        settle time since the send has passed (issue 36: a slow shop was paid twice).

        "Not there" while the first request may still be in flight proves nothing: it is
        only believed once the backend has had its declared time. The wait counts the
        backoff asked for as well as the clock, so an injected sleep that returns at once
        still ends it, and a real one never ends it early.
        """
        tool = self.registry.get(step.tool)
        settle_s = tool.settle_s if tool is not None else 0.0
        started = self._clock()
        since_send = 0.0 if sent_at is None else (started - sent_at).total_seconds()
        asked = 0.0
        reads = 0
        while True:
            found = await self.registry.reconcile(step.tool, step.args, self._ctx(run, step))
            reads += 1
            if found.verdict is Verdict.HAPPENED or tool is None or tool.reconcile is None:
                return found
            waited = since_send + max(asked, (self._clock() - started).total_seconds())
            if waited >= settle_s:
                if reads > 1:
                    found = replace(
                        found, message=f"{found.message} ({reads} reads over {waited:.1f}s)"
                    )
                return found
            delay = min(settle_s - waited, self.policy.backoff.delay(reads, self._rand))
            asked += delay
            log.info(
                "run %s step %s (%s): %s; read again in %.1fs (settle time %.0fs)",
                run.id,
                step.id,
                step.tool,
                found.verdict.value,
                delay,
                settle_s,
                extra={"trace_id": run.trace_id},
            )
            await self._sleep(delay)

    async def _reconcile(
        self,
        batch: _Batch,
        step: PlanStep,
        error: ToolError,
        *,
        attempt: int,
        sent_at: datetime | None = None,
    ) -> bool:
        """Decide by the tool's reconcile read whether the change `error` left in doubt
        happened, and act on it (see "Writes to a backend that ignores idempotency keys");
        False when the run stopped. `sent_at`: when the doubtful request went out (None
        after a restart: not known, so counted from now)."""
        run = batch.run
        found = await self._settled_read(run, step, sent_at)
        then = after_reconcile(
            found.verdict, retry_count=step.retry_count, max_retries=step.max_retries
        )
        await self._emit(
            batch,
            transitions.reconciled(
                run,
                step,
                error,
                f"{found.verdict.value}: {found.message}",
                attempt=attempt,
                now=self._clock(),
            ),
        )
        if then is AfterReconcile.DONE:
            await self._succeed(
                batch, step, ToolOk(data=found.data, notes=found.notes), attempt=attempt
            )
            return True
        if then is AfterReconcile.RETRY:
            await self._retry(batch, step, error, attempt)
            return True
        if then is AfterReconcile.STOP:
            events = transitions.fail_step(
                run, step, error, attempt=attempt, now=self._clock(), catalog=self.catalog
            )
            await self._emit(batch, *events)
            return not run.is_terminal  # steps that do not depend on it go on
        log.warning(
            "run %s step %s (%s): unknown outcome, flagged for staff: %s",
            run.id,
            step.id,
            step.tool,
            found.message,
            extra={"trace_id": run.trace_id},
        )
        await self._emit(
            batch,
            *transitions.unknown_outcome(
                run,
                step,
                error,
                found.message,
                attempt=attempt,
                now=self._clock(),
                catalog=self.catalog,
            ),
        )
        return not run.is_terminal  # steps that do not depend on it go on

    async def _act(self, batch: _Batch, step: PlanStep) -> bool:
        """Run one attempt of `step`; False when the run stopped or paused."""
        run = batch.run
        attempt = step.retry_count + 1
        await self._emit(batch, transitions.start_step(run, step, now=self._clock()))

        sent_at = self._clock()
        result = await self.registry.call(step.tool, step.args, self._ctx(run, step))

        if isinstance(result, ToolOk):
            await self._succeed(batch, step, result, attempt=attempt)
            return True

        tool = self.registry.get(step.tool)
        if tool is not None and reconciles(
            risk=tool.risk,
            idempotency=tool.idempotency,
            may_have_happened=result.may_have_happened,
        ):
            return await self._reconcile(batch, step, result, attempt=attempt, sent_at=sent_at)
        decision = self.policy.decide(
            result.error_type,
            retry_count=step.retry_count,
            max_retries=step.max_retries,
            overrides=tool.policy if tool else None,
        )
        if decision is Decision.PAUSE and step.approval is not None:
            # Already approved and the tool still wants a confirmation: asking again would loop.
            decision = Decision.STOP
        if (
            decision is Decision.STOP
            and result.error_type is ErrorType.UNAVAILABLE
            and result.code == SERVER_ERROR_CODE
        ):
            # The backend's own server kept failing through every retry: not a busy moment
            # but a broken shop system, for staff to fix (the customer is told so).
            result = result.model_copy(update={"error_type": ErrorType.BACKEND})

        if decision is Decision.RETRY:
            await self._retry(batch, step, result, attempt)
            return True
        if decision is Decision.FALLBACK:
            await self._emit(
                batch, transitions.fall_back(run, step, result, attempt=attempt, now=self._clock())
            )
            return True
        if decision is Decision.PAUSE:
            event = transitions.pause(
                run,
                step,
                reason=result.message,
                nonce=self._new_nonce(),
                now=self._clock(),
                error=result,
                catalog=self.catalog,
            )
            await self._emit(batch, event)
            return False
        events = transitions.fail_step(
            run, step, result, attempt=attempt, now=self._clock(), catalog=self.catalog
        )
        await self._emit(batch, *events)
        return not run.is_terminal  # steps that do not depend on it go on


def _reconciled_on_recovery(tool: Tool | None) -> bool:
    """A step found `running` at the start of a drive was interrupted by a crash; its call
    may have arrived. Re-sending it is safe only where the backend honours the key."""
    return tool is not None and reconciles(
        risk=tool.risk, idempotency=tool.idempotency, may_have_happened=True
    )
