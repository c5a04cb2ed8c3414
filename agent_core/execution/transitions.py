"""Every state change of a run, as functions of (run, step, what happened, now).

The executor decides *which* transition comes next (the plan, the tool's result, the
failure policy); the functions here say *what* it does to the run and which event records
it. The agent service uses the same functions (an expired pause), so a run ends the same
way whoever ends it, and `Executor.commit` records and announces it the same way.

They are pure in the sense that matters for replay and tests: no I/O, no clock, no
randomness (the time and the pause nonce are arguments). They change the run they are
given in place rather than returning a copy: the executor holds the run and its steps for
the whole drive, and a copy per transition would cost every run for nothing. Each returns
the `RunEvent`(s) to journal, built after the change, so an event's `status` is the state
it leads to; each also stamps `run.updated_at`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from agent_core.answers.compose import compose
from agent_core.catalog.builtin import CATALOG
from agent_core.catalog.spec import ToolSpec
from agent_core.execution.dependencies import declared, stopped_by
from agent_core.models import (
    Decision,
    ErrorType,
    EventKind,
    Language,
    Pause,
    PlanStep,
    Run,
    RunEvent,
    RunStatus,
    StepError,
    StepStatus,
    ToolError,
)

MAX_STEPS_REASON = "max_steps"
EXPIRED_MESSAGE = "approval expired"
ANSWER_CLIPPED_MESSAGE = "answer clipped to fit two Telegram messages"

# The catalog in use: the answers word every tool from its entry.
Catalog = Mapping[str, ToolSpec]


# Assigning fields: `model.name = value` on a pydantic model goes through its Python
# `__setattr__` (a memoised handler, two Python frames, three hooked attribute reads: ~3 k
# instructions), and a standard run makes 46 of them here. The transitions a run goes
# through on every drive write what that handler writes for a plain field, directly: the
# value into the model's `__dict__`, the name into its `model_fields_set` (`_assign`). No
# validation either way: `Run` and `PlanStep` do not validate assignment (a test says so).
def _assign(model: Run | PlanStep, values: dict[str, Any]) -> None:
    vars(model).update(values)
    model.__pydantic_fields_set__.update(values)


def event(
    run: Run,
    kind: EventKind,
    step: PlanStep | None = None,
    *,
    now: datetime,
    attempt: int | None = None,
    status: str | None = None,
    error_type: ErrorType | None = None,
    decision: Decision | None = None,
    delay_s: float | None = None,
    message: str | None = None,
) -> RunEvent:
    """The record of a transition that just happened to `run` (and `step`) at `now`."""
    # Fields read through `vars()`, enum values as `_value_`: an attribute of a pydantic
    # model costs ~0.4 k instructions (its `__getattr__` hook), `.value` two Python calls;
    # every transition comes through here. `updated_at` is assigned as `_assign` does.
    fields = vars(run)
    fields["updated_at"] = now
    run.__pydantic_fields_set__.add("updated_at")
    held = vars(step) if step is not None else None
    return _new_event(
        {
            "kind": kind,
            "run_id": fields["id"],
            "trace_id": fields["trace_id"],
            "step_id": held["id"] if held else None,
            "tool": held["tool"] if held else None,
            "attempt": attempt,
            "status": status or (held["status"] if held else fields["status"])._value_,
            "error_type": error_type,
            "decision": decision,
            "delay_s": None if delay_s is None else float(delay_s),
            "message": message,
            "at": now,
        }
    )


# Making the event: `RunEvent(...)` validates its twelve fields (~25 k instructions, ten
# times a standard run), though every value here comes from validated models, the enums
# and the clock, typed as the fields are. `_new_event` makes the same model as that call
# would (every field named, so `model_fields_set` is all of them; no extra, no private
# attributes) without validating: what `model_construct` does, less its Python loop over
# the fields (which costs more than the validation). `delay_s` is made a float above, as
# validation would; a test compares the two ways on every kind of event.
_new_object = object.__new__
_set_slot = object.__setattr__


def _new_event(values: dict[str, Any]) -> RunEvent:
    made = _new_object(RunEvent)
    _set_slot(made, "__dict__", values)
    _set_slot(made, "__pydantic_fields_set__", set(values))
    _set_slot(made, "__pydantic_extra__", None)
    _set_slot(made, "__pydantic_private__", None)
    return made


def planned(run: Run, *, now: datetime) -> RunEvent:
    """A fresh plan is on record (nothing about the run changes)."""
    return event(run, EventKind.RUN_PLANNED, now=now)


def start_step(run: Run, step: PlanStep, *, now: datetime) -> RunEvent:
    """One attempt of `step` begins; it counts against the run's attempt budget."""
    held = vars(step)
    _assign(run, {"attempts": vars(run)["attempts"] + 1, "status": RunStatus.RUNNING})
    _assign(step, {"status": StepStatus.RUNNING, "started_at": held["started_at"] or now})
    return event(run, EventKind.STEP_STARTED, step, now=now, attempt=held["retry_count"] + 1)


def succeed(run: Run, step: PlanStep, data: Any, *, attempt: int, now: datetime) -> RunEvent:
    _assign(
        step, {"status": StepStatus.DONE, "observation": data, "error": None, "finished_at": now}
    )
    return event(run, EventKind.STEP_SUCCEEDED, step, now=now, attempt=attempt)


def skipped(run: Run, step: PlanStep, *, now: datetime) -> RunEvent:
    """The record of a step an observation rule skipped (`rules.update_plan` skips it)."""
    return event(run, EventKind.STEP_SKIPPED, step, now=now, message=step.skip_reason)


def noticed(run: Run, step: PlanStep, message: str, *, now: datetime) -> RunEvent:
    """Something staff should know about a step that changes nothing (a clipped value)."""
    return event(run, EventKind.NOTICE, step, now=now, message=message)


def _failed_attempt(step: PlanStep, error: ToolError) -> None:
    step.error = StepError(type=error.error_type, message=error.message, code=error.code)


def retry(
    run: Run, step: PlanStep, error: ToolError, *, attempt: int, delay_s: float, now: datetime
) -> RunEvent:
    """The attempt failed transiently; the step is pending again after `delay_s`."""
    _failed_attempt(step, error)
    step.retry_count += 1
    step.status = StepStatus.PENDING
    return event(
        run,
        EventKind.STEP_RETRYING,
        step,
        now=now,
        attempt=attempt,
        error_type=error.error_type,
        decision=Decision.RETRY,
        delay_s=delay_s,
        message=error.message,
    )


def reconciled(
    run: Run, step: PlanStep, error: ToolError, verdict: str, *, attempt: int, now: datetime
) -> RunEvent:
    """A read decided whether the change `error` left in doubt happened (`verdict`, for
    staff). Changes nothing on the step: what follows (done, retry, stop) does."""
    return event(
        run,
        EventKind.STEP_RECONCILED,
        step,
        now=now,
        attempt=attempt,
        error_type=error.error_type,
        decision=Decision.RECONCILE,
        message=f"{error.message} -> {verdict}",
    )


UNKNOWN_OUTCOME_NOTICE = (
    "unknown outcome: {tool} may have been carried out and nobody could tell; it was not "
    "sent again. Check it at the backend before anyone tries again ({detail})"
)


def unknown_outcome(
    run: Run,
    step: PlanStep,
    error: ToolError,
    detail: str,
    *,
    attempt: int | None,
    now: datetime,
    catalog: Catalog = CATALOG,
) -> list[RunEvent]:
    """Nobody can tell whether the change happened: the step and the run stop as
    `unknown_outcome` (the customer is told it is being checked) and a notice flags the run
    for staff (`notice`, `step_failed`, `run_finished`)."""
    flagged = noticed(
        run, step, UNKNOWN_OUTCOME_NOTICE.format(tool=step.tool, detail=detail), now=now
    )
    doubt = ToolError(
        error_type=ErrorType.UNKNOWN_OUTCOME,
        message=f"{error.message}; {detail}",
        may_have_happened=True,
    )
    return [flagged, *fail_step(run, step, doubt, attempt=attempt, now=now, catalog=catalog)]


def fall_back(
    run: Run, step: PlanStep, error: ToolError, *, attempt: int, now: datetime
) -> RunEvent:
    """The step gave nothing usable; the answer says so and the plan goes on."""
    _failed_attempt(step, error)
    step.status = StepStatus.FALLBACK
    step.fallback_reason = error.message
    step.finished_at = now
    return event(
        run,
        EventKind.STEP_FALLBACK,
        step,
        now=now,
        attempt=attempt,
        error_type=error.error_type,
        decision=Decision.FALLBACK,
        message=error.message,
    )


def fail_step(
    run: Run,
    step: PlanStep,
    error: ToolError,
    *,
    attempt: int | None,
    now: datetime,
    catalog: Catalog = CATALOG,
) -> list[RunEvent]:
    """The step failed for good (`step_failed`). A failure of the shop's own system
    (`backend`) also flags the run for staff (`notice`).

    When the steps declare what they depend on (`dependencies`), only the pending steps
    that depend on this one stop, each skipped with why (`step_skipped`), and the run goes
    on with the others (it ends `failed` once nothing is left, `Executor._drive`): an
    unrelated request in the same message is still served. Otherwise the run stops here
    (`run_finished`). The run's `stop_reason` is its first failure's, unless a later one
    left a change unclear, which staff must hear of.
    """
    flagged = (
        [noticed(run, step, BACKEND_NOTICE.format(tool=step.tool, detail=error.message), now=now)]
        if error.error_type is ErrorType.BACKEND
        else []
    )
    _failed_attempt(step, error)
    step.status = StepStatus.FAILED
    step.finished_at = now
    failed = event(
        run,
        EventKind.STEP_FAILED,
        step,
        now=now,
        attempt=attempt,
        error_type=error.error_type,
        decision=Decision.STOP,
        message=error.message,
    )
    if run.stop_reason is None or error.error_type is ErrorType.UNKNOWN_OUTCOME:
        run.stop_reason = error.error_type.value
    if not declared(run):
        return [*flagged, failed, finish(run, RunStatus.FAILED, now=now, catalog=catalog)]
    stopped = []
    for later in stopped_by(run, step):
        _assign(
            later,
            {
                "status": StepStatus.SKIPPED,
                "skip_reason": blocked_reason(later, run.step(_blocker(run, later)), run.language),
                "finished_at": now,
            },
        )
        stopped.append(skipped(run, later, now=now))
    if run.next_step() is not None:
        return [*flagged, failed, *stopped]
    return [*flagged, failed, *stopped, finish(run, RunStatus.FAILED, now=now, catalog=catalog)]


def _blocker(run: Run, step: PlanStep) -> str:
    """The first step `step` depends on that did not get done (failed or stopped)."""
    for step_id in step.depends_on or ():
        if run.step(step_id).status in (StepStatus.FAILED, StepStatus.SKIPPED):
            return step_id
    return (step.depends_on or [step.id])[0]


def blocked_reason(step: PlanStep, blocker: PlanStep, language: Language) -> str:
    """Why `step` was not done: a step it needs did not work (in the customer's words)."""
    if language is Language.ZH:
        return f"{step.goal}：因为「{blocker.goal}」没有完成，未执行。"
    return f'{step.goal}: not done, because "{_lower_first(blocker.goal)}" did not work.'


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


BACKEND_NOTICE = (
    "backend failure: {tool} could not use the shop's system (refused credentials, "
    "repeated server errors or an answer that breaks the contract); fix it at the shop "
    "({detail})"
)


def reject_plan(
    run: Run, step: PlanStep, error: ToolError, *, now: datetime, catalog: Catalog = CATALOG
) -> list[RunEvent]:
    """A step's arguments are invalid before anything ran: that step fails, the others are
    dropped unrun (`cancelled`), and the run ends failed (`step_failed`, `run_finished`)."""
    for other in run.steps:
        if other is not step and other.status is StepStatus.PENDING:
            other.status = StepStatus.CANCELLED
    return fail_step(run, step, error, attempt=None, now=now, catalog=catalog)


def pause(
    run: Run,
    step: PlanStep,
    *,
    reason: str,
    nonce: str,
    now: datetime,
    error: ToolError | None = None,
    catalog: Catalog = CATALOG,
    approver: str = "customer",
) -> RunEvent:
    """Wait for the customer (or staff) before `step` runs; the pause binds to its exact
    arguments."""
    if error is not None:
        _failed_attempt(step, error)
    _assign(step, {"status": StepStatus.PAUSED, "pause_reason": reason})
    pause = Pause(
        step_id=step.id,
        nonce=nonce,
        tool=step.tool,
        args_hash=step.args_hash(),
        paused_at=now,
        approver=approver,
    )
    _assign(run, {"pause": pause, "status": RunStatus.PAUSED})
    _assign(run, {"answer": compose(run, catalog).text})
    return event(
        run,
        EventKind.STEP_PAUSED,
        step,
        now=now,
        decision=Decision.PAUSE,
        error_type=error.error_type if error else None,
        message=reason,
    )


def approval_is_stale(run: Run, step: PlanStep) -> bool:
    """The paused step's arguments are no longer what the customer was asked to approve."""
    return run.pause is not None and run.pause.args_hash != step.args_hash()


def ask_again(
    run: Run, step: PlanStep, *, nonce: str, now: datetime, catalog: Catalog = CATALOG
) -> RunEvent:
    """Drop a stale approval (see `approval_is_stale`) and pause again with a new nonce."""
    step.approval = None
    return pause(run, step, reason="arguments_changed", nonce=nonce, now=now, catalog=catalog)


def apply_decision(
    run: Run, step: PlanStep, *, now: datetime, catalog: Catalog = CATALOG
) -> list[RunEvent]:
    """Carry out the (current) decision written on a paused step (`step.approval`).

    Approved: the step is pending again (`step_approved`). Declined: it and every later
    pending step are cancelled and the run ends as `declined` (`step_declined`,
    `run_finished`): nothing was changed, which "cancelled" would not say to staff.
    """
    assert step.approval is not None
    _assign(run, {"pause": None, "status": RunStatus.RUNNING})
    if step.approval.approved:
        _assign(step, {"status": StepStatus.PENDING})
        return [event(run, EventKind.STEP_APPROVED, step, now=now)]
    step.status = StepStatus.CANCELLED
    step.finished_at = now
    declined = event(run, EventKind.STEP_DECLINED, step, now=now)
    for later in run.steps:
        if later.status is StepStatus.PENDING:
            later.status = StepStatus.CANCELLED
    return [declined, finish(run, RunStatus.DECLINED, now=now, catalog=catalog)]


def stop_at_max_steps(run: Run, *, now: datetime, catalog: Catalog = CATALOG) -> RunEvent:
    """The run used up its attempts: it fails before acting again."""
    run.stop_reason = MAX_STEPS_REASON
    return finish(run, RunStatus.FAILED, now=now, catalog=catalog)


def finish(
    run: Run,
    status: RunStatus,
    *,
    now: datetime,
    message: str | None = None,
    catalog: Catalog = CATALOG,
) -> RunEvent:
    """The run ends with `status`; its answer is composed from what the steps observed.

    An answer clipped to fit two Telegram messages says so on the event (for staff).
    """
    _assign(run, {"status": status, "pause": None, "finished_at": now})
    answer = compose(run, catalog)
    _assign(run, {"answer": answer.text})
    if answer.clipped and message is None:
        message = ANSWER_CLIPPED_MESSAGE
    return event(run, EventKind.RUN_FINISHED, now=now, status=status.value, message=message)


def expire(run: Run, *, now: datetime, catalog: Catalog = CATALOG) -> RunEvent:
    """Nobody decided in time (the claim found the pause too old): close the paused step
    and end the run as expired. Nothing ran."""
    if run.pause is not None:
        step = run.step(run.pause.step_id)
        step.status = StepStatus.CANCELLED
        step.finished_at = now
    return finish(run, RunStatus.EXPIRED, now=now, message=EXPIRED_MESSAGE, catalog=catalog)
