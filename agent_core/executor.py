"""Plan → next step → act → observe → update plan → … → answer.

One pending step at a time. Every transition goes to the journal (durable storage) before
the executor moves on — a step is recorded `running` before its tool is called — and then
to the listeners (progress messages), whose failures never stop a run.

A high-risk step pauses *before* its tool runs. The run resumes from that step once the
customer's decision is written on it (`step.approval`), so earlier steps never run again.
"""

from __future__ import annotations

import asyncio
import logging
import random
import secrets
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Protocol

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


class Journal(Protocol):
    """Durable record of transitions. `record` returns only once the event is committed."""

    async def record(self, run: Run, event: RunEvent) -> None: ...


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
        self.journal: Journal = journal or NullJournal()
        self.listeners = list(listeners)
        self.policy = policy or FailurePolicy()
        self.rules = rules
        self._sleep = sleep
        self._clock = clock
        self._rand = rand
        self._new_nonce = new_nonce

    async def start(self, run: Run) -> Run:
        """Record a freshly planned run and drive it to an answer or a pause."""
        await self._emit(run, EventKind.RUN_PLANNED)
        if not run.steps:
            return await self._finish(run, RunStatus.COMPLETED)
        return await self.drive(run)

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
        await self.journal.record(run, event)
        for listener in self.listeners:
            try:
                await listener(run, event)
            except Exception:
                log.exception("listener failed on %s", kind.value, extra={"trace_id": run.trace_id})
