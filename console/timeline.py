"""A run as the run page shows it: the plan, step by step, with what happened to each.

The `steps` rows hold each step's final state; the `events` log holds how it got there.
A retried step that finally succeeded has no error left on its row, so its attempts (when
each started, how it failed, what the policy decided, how long it backed off) are rebuilt
here from the event log. That is what staff need to tell a flaky tool from a wrong plan.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agent_core.answers.compose import step_progress
from agent_core.models import EventKind, PlanStep, Run
from storage.handoffs import Handoff
from storage.records import TimelineEntry, delivered_answer

# What ends one attempt of a step, and how the page names the outcome.
_ATTEMPT_ENDS = {
    EventKind.STEP_SUCCEEDED: "succeeded",
    EventKind.STEP_RETRYING: "failed, retrying",
    EventKind.STEP_FAILED: "failed",
    EventKind.STEP_FALLBACK: "nothing found, fell back",
    EventKind.STEP_PAUSED: "paused",
}
# Step events that are not attempts but decisions about the step.
_STEP_NOTES = {
    EventKind.STEP_SKIPPED: "skipped",
    EventKind.STEP_PAUSED: "waiting for the customer",
    EventKind.DECISION_CLAIMED: "customer decided",
    EventKind.STEP_APPROVED: "approval applied",
    EventKind.STEP_DECLINED: "declined by the customer, nothing changed",
    EventKind.STEP_RECONCILED: "reconciled: a read decided whether the change happened",
}
# The same notes for a step our team (staff) decides (issue 14's staff approval): never
# "the customer" for what a staff member did.
_STAFF_STEP_NOTES = _STEP_NOTES | {
    EventKind.STEP_PAUSED: "waiting for staff approval",
    EventKind.DECISION_CLAIMED: "staff decided",
    EventKind.STEP_DECLINED: "rejected by staff, nothing changed",
}
# Facts outside the plan that the page lists as notes under the answer.
_NOTICE_KINDS = (EventKind.NOTICE, EventKind.PROMPT_SHOWN, EventKind.CUSTOMER_BLOCKED)


@dataclass
class Attempt:
    number: int
    started_at: datetime
    ended_at: datetime | None = None
    outcome: str = "interrupted"  # no end event: the process stopped mid-attempt
    error_type: str | None = None
    message: str | None = None
    decision: str | None = None
    backoff_s: float | None = None

    @property
    def took_s(self) -> float | None:
        if self.ended_at is None:
            return None
        return (self.ended_at - self.started_at).total_seconds()


@dataclass
class StepNote:
    at: datetime
    label: str
    message: str | None
    decision: str | None


@dataclass
class StepView:
    number: int
    step: PlanStep
    progress: str
    args_json: str
    observation_json: str | None
    attempts: list[Attempt] = field(default_factory=list)
    notes: list[StepNote] = field(default_factory=list)
    # Our team, not the customer, decides (decided) this step's pause.
    staff_decides: bool = False
    # The numbers of the earlier steps it needs (a failure of one stops it); None: not
    # declared (a run planned before steps said it).
    needs: list[int] | None = None

    @property
    def duration_s(self) -> float | None:
        if self.step.started_at is None or self.step.finished_at is None:
            return None
        return (self.step.finished_at - self.step.started_at).total_seconds()


@dataclass
class RunView:
    run: Run
    steps: list[StepView]
    events: Sequence[TimelineEntry]
    notices: list[TimelineEntry]
    # Handoffs to a person this run led to (issue 14), oldest first.
    handoffs: Sequence[Handoff] = ()
    # The answer as it was sent to the customer (None: no delivery recorded).
    delivered: str | None = None

    @property
    def duration_s(self) -> float | None:
        if self.run.finished_at is None:
            return None
        return (self.run.finished_at - self.run.created_at).total_seconds()


def pretty_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)


def build_run_view(
    run: Run, timeline: Sequence[TimelineEntry], handoffs: Sequence[Handoff] = ()
) -> RunView:
    steps = [
        StepView(
            number=n,
            step=step,
            progress=step_progress(step, run),
            args_json=pretty_json(step.args),
            observation_json=None if step.observation is None else pretty_json(step.observation),
            staff_decides=staff_decides(run, step),
        )
        for n, step in enumerate(run.steps, start=1)
    ]
    by_id = {view.step.id: view for view in steps}
    for shown in steps:
        if shown.step.depends_on is not None:
            shown.needs = [by_id[i].number for i in shown.step.depends_on if i in by_id]
    for entry in timeline:
        view = by_id.get(entry.step_id or "")
        if view is not None:
            _apply(view, entry)
    notices = [e for e in timeline if e.kind in _NOTICE_KINDS]
    return RunView(
        run=run,
        steps=steps,
        events=timeline,
        notices=notices,
        handoffs=handoffs,
        delivered=delivered_answer(timeline),
    )


def staff_decides(run: Run, step: PlanStep) -> bool:
    """Whether this step's pause is (was) our team's to decide: an open staff pause, or a
    decision made by someone other than the run's customer (only staff can)."""
    if run.pause is not None and run.pause.step_id == step.id:
        return run.pause.approver == "staff"
    return step.approval is not None and step.approval.by_user_id != run.user_id


def handoff_wait_s(handoff: Handoff) -> float | None:
    """How long the customer waited for the first staff reply (None: none yet)."""
    if handoff.first_staff_reply_at is None:
        return None
    return (handoff.first_staff_reply_at - handoff.opened_at).total_seconds()


def _apply(view: StepView, entry: TimelineEntry) -> None:
    if entry.kind is EventKind.STEP_STARTED:
        number = entry.attempt or len(view.attempts) + 1
        view.attempts.append(Attempt(number=number, started_at=entry.at))
        return
    open_attempt = view.attempts[-1] if view.attempts else None
    if open_attempt is not None and open_attempt.ended_at is None and _ends_attempt(entry):
        open_attempt.ended_at = entry.at
        open_attempt.outcome = _ATTEMPT_ENDS[entry.kind]
        open_attempt.error_type = entry.error_type
        open_attempt.message = entry.message
        open_attempt.decision = entry.decision
        open_attempt.backoff_s = entry.delay_s
        return
    notes = _STAFF_STEP_NOTES if view.staff_decides else _STEP_NOTES
    if entry.kind in notes:
        view.notes.append(
            StepNote(
                at=entry.at,
                label=notes[entry.kind],
                message=entry.message,
                decision=entry.decision,
            )
        )


def _ends_attempt(entry: TimelineEntry) -> bool:
    # A pause ends an attempt only after a tool error (confirmation_required); a pause
    # before a high-risk step runs at all is a decision, not an attempt.
    if entry.kind is EventKind.STEP_PAUSED:
        return entry.error_type is not None
    return entry.kind in _ATTEMPT_ENDS
