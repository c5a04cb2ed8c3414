"""Plan → next step → act → observe → update plan → … → answer.

One pending step at a time. Transitions go to the journal (durable storage) and then to
the listeners (progress messages), whose failures never stop a run. A transition is told
to the listeners only once it is durable, so a customer is never shown a state that a
crash could take back.

A high-risk step pauses *before* its tool runs. The run resumes from that step once the
customer's decision is written on it (`step.approval`), so earlier steps never run again.

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
are delivered, in order, right after that commit. A standard run (status → policy →
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
  step is re-run and the run ends by its new outcome. The customer saw neither.
* lost `step_approved` / `step_declined`: the decision itself was committed by the claim
  (`decision_claimed`, with `approval` on the step), so recovery applies it again.
A transition that must never be lost gets its own commit point; the claim (one press wins)
is storage's own transaction and is not affected.

Journals that cannot commit several transitions at once (anything without
`record_many`, e.g. test recorders) get every transition committed on its own, as
before.
"""

from __future__ import annotations

import asyncio
import logging
import random
import secrets
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from agent_core.answers import compose_answer
from agent_core.models import (
    Approval,
    Decision,
    ErrorType,
    EventKind,
    Pause,
    PlanStep,
    Risk,
    Run,
    RunEvent,
    RunStatus,
    StepError,
    StepStatus,
    ToolOk,
    utcnow,
)
from agent_core.policy import FailurePolicy
from agent_core.rules import DEFAULT_RULES, SkipRule, update_plan
from agent_core.tools import ToolContext, ToolRegistry

log = logging.getLogger(__name__)

MAX_STEPS_REASON = "max_steps"

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
    """Durable record of transitions. `record` returns only once the event is committed."""

    async def record(self, run: Run, event: RunEvent) -> None: ...


@runtime_checkable
class GroupJournal(Journal, Protocol):
    """A journal that can commit several transitions of one run in one transaction."""

    async def record_many(self, run: Run, events: Sequence[RunEvent]) -> None:
        """Commit `events` (in order) and the run's current state atomically; return once
        durable. A failure means none of them is committed."""
        ...


class Listener(Protocol):
    async def __call__(self, run: Run, event: RunEvent) -> None: ...


class NullJournal:
    """For runs nobody needs to replay (unit tests, dry runs)."""

    async def record(self, run: Run, event: RunEvent) -> None:
        return None


class Executor:
    def __init__(
        self,
        registry: ToolRegistry,
        *,
        journal: Journal | None = None,
        listeners: Sequence[Listener] = (),
        policy: FailurePolicy | None = None,
        rules: Sequence[SkipRule] = DEFAULT_RULES,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], datetime] = utcnow,
        rand: Callable[[], float] = random.random,
        new_nonce: Callable[[], str] = lambda: secrets.token_urlsafe(8),
    ) -> None:
        self.registry = registry
        self.journal = journal or NullJournal()
        self.listeners = list(listeners)
        self.policy = policy or FailurePolicy()
        self.rules = rules
        self._sleep = sleep
        self._clock = clock
        self._rand = rand
        self._new_nonce = new_nonce
        # Per run being driven (by object: two copies of a run never share a buffer):
        # transitions waiting for the run's next commit point, in order.
        self._pending: dict[int, list[RunEvent]] = {}

    @property
    def journal(self) -> Journal:
        return self._journal

    @journal.setter
    def journal(self, journal: Journal) -> None:
        self._journal = journal
        self._record_many = journal.record_many if isinstance(journal, GroupJournal) else None

    async def start(self, run: Run) -> Run:
        """Record a freshly planned run and drive it to an answer or a pause."""
        try:
            await self._emit(run, EventKind.RUN_PLANNED)
            if not run.steps:
                run = await self._finish(run, RunStatus.COMPLETED)
            else:
                run = await self._drive(run)
        except BaseException:
            self._pending.pop(id(run), None)  # never committed: nobody was told either
            raise
        await self._settle(run)
        return run

    async def resume(self, run: Run, *, approved: bool, by_user_id: int) -> Run:
        """Write the customer's decision on the paused step and continue from it.

        Storage-backed callers claim the decision atomically first (see `Agent.decide`)
        and then call `drive`; this is the in-memory path.
        """
        step = self._paused_step(run)
        step.approval = Approval(approved=approved, by_user_id=by_user_id, at=self._clock())
        if run.pause is not None:
            run.pause.nonce = None
        run.status = RunStatus.RUNNING
        return await self.drive(run)

    async def drive(self, run: Run) -> Run:
        """Act on pending steps until the plan is done, stops, or waits for the customer.

        Also the recovery entry point: a step left `running` by a crash is acted on again
        with the same idempotency key.
        """
        try:
            run = await self._drive(run)
        except BaseException:
            self._pending.pop(id(run), None)  # never committed: nobody was told either
            raise
        await self._settle(run)
        return run

    async def _settle(self, run: Run) -> None:
        """Commit transitions still waiting when the executor stops driving `run`.

        Every way out of `_drive` ends at a commit point, so there are none; this keeps it
        that way should a new path forget to.
        """
        pending = self._pending.pop(id(run), None)
        if pending:
            await self._commit(run, pending)

    async def _drive(self, run: Run) -> Run:
        if run.is_terminal:
            return run
        while True:
            step = run.next_step()
            if step is None:
                return await self._finish(run, RunStatus.COMPLETED)
            if step.status is StepStatus.PAUSED:
                if step.approval is None:
                    run.status = RunStatus.PAUSED
                    return run
                if not await self._apply_decision(run, step):
                    return run
                continue
            tool = self.registry.get(step.tool)
            if tool is not None and tool.risk is Risk.HIGH and step.approval is None:
                await self._pause(run, step, reason="high_risk")
                return run
            if run.attempts >= run.max_attempts:
                run.stop_reason = MAX_STEPS_REASON
                return await self._finish(run, RunStatus.FAILED)
            if not await self._act(run, step):
                return run

    async def _act(self, run: Run, step: PlanStep) -> bool:
        """Run one attempt of `step`; False when the run stopped or paused."""
        run.attempts += 1
        run.status = RunStatus.RUNNING
        step.status = StepStatus.RUNNING
        step.started_at = step.started_at or self._clock()
        attempt = step.retry_count + 1
        await self._emit(run, EventKind.STEP_STARTED, step, attempt=attempt)

        ctx = ToolContext(
            user_id=run.user_id, trace_id=run.trace_id, run_id=run.id, step_id=step.id
        )
        result = await self.registry.call(step.tool, step.args, ctx)

        if isinstance(result, ToolOk):
            step.status = StepStatus.DONE
            step.observation = result.data
            step.error = None
            step.finished_at = self._clock()
            await self._emit(run, EventKind.STEP_SUCCEEDED, step, attempt=attempt)
            for skipped in update_plan(run, self.rules):
                await self._emit(run, EventKind.STEP_SKIPPED, skipped, message=skipped.skip_reason)
            return True

        step.error = StepError(type=result.error_type, message=result.message)
        tool = self.registry.get(step.tool)
        decision = self.policy.decide(
            result.error_type,
            retry_count=step.retry_count,
            max_retries=step.max_retries,
            overrides=tool.policy if tool else None,
        )
        if decision is Decision.PAUSE and step.approval is not None:
            # Already approved and the tool still wants a confirmation: asking again would loop.
            decision = Decision.STOP

        if decision is Decision.RETRY:
            step.retry_count += 1
            step.status = StepStatus.PENDING
            delay = self.policy.backoff.delay(step.retry_count, self._rand)
            await self._emit(
                run,
                EventKind.STEP_RETRYING,
                step,
                attempt=attempt,
                error_type=result.error_type,
                decision=decision,
                delay_s=delay,
                message=result.message,
            )
            await self._sleep(delay)
            return True
        if decision is Decision.FALLBACK:
            step.status = StepStatus.FALLBACK
            step.fallback_reason = result.message
            step.finished_at = self._clock()
            await self._emit(
                run,
                EventKind.STEP_FALLBACK,
                step,
                attempt=attempt,
                error_type=result.error_type,
                decision=decision,
                message=result.message,
            )
            return True
        if decision is Decision.PAUSE:
            await self._pause(run, step, reason=result.message, error_type=result.error_type)
            return False

        step.status = StepStatus.FAILED
        step.finished_at = self._clock()
        await self._emit(
            run,
            EventKind.STEP_FAILED,
            step,
            attempt=attempt,
            error_type=result.error_type,
            decision=Decision.STOP,
            message=result.message,
        )
        run.stop_reason = result.error_type.value
        await self._finish(run, RunStatus.FAILED)
        return False

    async def _pause(
        self, run: Run, step: PlanStep, *, reason: str, error_type: ErrorType | None = None
    ) -> None:
        step.status = StepStatus.PAUSED
        step.pause_reason = reason
        run.pause = Pause(
            step_id=step.id,
            nonce=self._new_nonce(),
            tool=step.tool,
            args_hash=step.args_hash(),
            paused_at=self._clock(),
        )
        run.status = RunStatus.PAUSED
        run.answer = compose_answer(run)
        await self._emit(
            run,
            EventKind.STEP_PAUSED,
            step,
            decision=Decision.PAUSE,
            error_type=error_type,
            message=reason,
        )

    async def _apply_decision(self, run: Run, step: PlanStep) -> bool:
        """Carry out the decision written on a paused step; False when the run stops here."""
        assert step.approval is not None
        if run.pause is not None and run.pause.args_hash != step.args_hash():
            # What would run is not what the customer approved: ask again.
            step.approval = None
            await self._pause(run, step, reason="arguments_changed")
            return False
        run.pause = None
        run.status = RunStatus.RUNNING
        if step.approval.approved:
            step.status = StepStatus.PENDING
            await self._emit(run, EventKind.STEP_APPROVED, step)
            return True
        step.status = StepStatus.CANCELLED
        step.finished_at = self._clock()
        await self._emit(run, EventKind.STEP_DECLINED, step)
        for later in run.steps:
            if later.status is StepStatus.PENDING:
                later.status = StepStatus.CANCELLED
        await self._finish(run, RunStatus.CANCELLED)
        return False

    async def _finish(self, run: Run, status: RunStatus) -> Run:
        run.status = status
        run.pause = None
        run.finished_at = self._clock()
        run.answer = compose_answer(run)
        await self._emit(run, EventKind.RUN_FINISHED, status=status.value)
        return run

    def _paused_step(self, run: Run) -> PlanStep:
        if run.status is not RunStatus.PAUSED or run.pause is None:
            raise ValueError(f"run {run.id} is not waiting for a confirmation")
        return run.step(run.pause.step_id)

    async def _emit(
        self,
        run: Run,
        kind: EventKind,
        step: PlanStep | None = None,
        *,
        attempt: int | None = None,
        status: str | None = None,
        error_type: ErrorType | None = None,
        decision: Decision | None = None,
        delay_s: float | None = None,
        message: str | None = None,
    ) -> None:
        now = self._clock()
        run.updated_at = now
        event = RunEvent(
            kind=kind,
            run_id=run.id,
            trace_id=run.trace_id,
            step_id=step.id if step else None,
            tool=step.tool if step else None,
            attempt=attempt,
            status=status or (step.status.value if step else run.status.value),
            error_type=error_type,
            decision=decision,
            delay_s=delay_s,
            message=message,
            at=now,
        )
        if self._record_many is None:  # no group commits: every transition on its own
            await self._journal.record(run, event)
            await self._notify(run, (event,))
            return
        pending = self._pending.get(id(run))
        if kind not in COMMIT_POINTS:
            if pending is None:
                self._pending[id(run)] = [event]
            else:
                pending.append(event)
            return
        if pending is None:
            await self._commit(run, (event,))
        else:
            del self._pending[id(run)]
            pending.append(event)
            await self._commit(run, pending)

    async def _commit(self, run: Run, events: Sequence[RunEvent]) -> None:
        """Make `events` durable in one transaction, then (only then) tell the listeners."""
        assert self._record_many is not None
        await self._record_many(run, events)
        await self._notify(run, events)

    async def _notify(self, run: Run, events: Sequence[RunEvent]) -> None:
        for event in events:
            for listener in self.listeners:
                try:
                    await listener(run, event)
                except Exception:
                    log.exception(
                        "listener failed on %s", event.kind.value, extra={"trace_id": run.trace_id}
                    )
