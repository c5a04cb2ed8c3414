"""What storage gives back to readers: run summaries, timeline entries, failure counts,
and the documented JSON shape of a run (CLI `--json`, `stepwise export`, console export).

Read models only; how they are written and queried lives in `storage.runs.sqlite` and
`storage.history`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from agent_core.models import EventKind, Language, Run, RunStatus
from agent_core.understanding.lexicon import POLICY_QUERIES


class RunSummary(BaseModel):
    id: str
    trace_id: str
    user_id: int
    chat_id: int
    request_text: str
    language: Language
    status: RunStatus
    step_count: int
    retries: int
    # Part of the request was something no tool serves: never a clean success.
    unsupported: bool = False
    # A person took the conversation over from this run (a handoff was opened for it).
    handed_off: bool = False
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None


# The `answer_delivered` event's message: this note, then (after ":\n") the text that was
# sent, exactly (issue 23 #2): what the customer saw is read from here, never re-rendered
# (a handoff replaces the run's answer with its own reply, for one).
ANSWER_DELIVERED_NOTE = "telegram: answer delivered"


def delivered_note(text: str) -> str:
    return f"{ANSWER_DELIVERED_NOTE}:\n{text}"


def delivered_answer(timeline: Sequence[TimelineEntry]) -> str | None:
    """The text of the run's last delivered answer, as sent; None when none was recorded
    (a CLI run, or one delivered before the text was kept)."""
    prefix = ANSWER_DELIVERED_NOTE + ":\n"
    for entry in reversed(timeline):
        if entry.kind is EventKind.ANSWER_DELIVERED and (entry.message or "").startswith(prefix):
            return (entry.message or "")[len(prefix) :]
    return None


class RunPage(BaseModel):
    items: list[RunSummary]
    next_cursor: str | None  # pass back as `before` for the next (older) page


class TimelineEntry(BaseModel):
    seq: int
    kind: EventKind
    step_id: str | None
    tool: str | None
    args: Any = None
    attempt: int | None
    status: str | None
    error_type: str | None
    decision: str | None
    delay_s: float | None
    observation: Any = None
    message: str | None
    at: datetime


class FailureCount(BaseModel):
    error_type: str
    tool: str | None
    count: int


def run_json(run: Run) -> dict[str, Any]:
    """The documented JSON shape of a run (ask/confirm/reject --json, export)."""
    return {
        "run_id": run.id,
        "trace_id": run.trace_id,
        "status": run.status.value,
        "language": run.language.value,
        "answer": run.answer,
        "clarify": _clarify_json(run),
        "unsupported": run.unsupported,
        "handoff": (
            {"reason": run.interpretation.handoff.reason}
            if run.interpretation is not None and run.interpretation.handoff is not None
            else None
        ),
        "steps": [
            {
                "id": s.id,
                "goal": s.goal,
                "tool": s.tool,
                "args": s.args,
                "status": s.status.value,
                "observation": s.observation,
                "error": {"type": s.error.type.value, "message": s.error.message}
                if s.error
                else None,
                "skip_reason": s.skip_reason,
                "fallback_reason": s.fallback_reason,
                "retry_count": s.retry_count,
            }
            for s in run.steps
        ],
    }


def _clarify_json(run: Run) -> dict[str, Any] | None:
    clarify = run.clarify
    if clarify is None:
        return None
    return {
        "question": clarify.question,
        "options": [{"label": o.label, "text": o.text} for o in clarify.options],
    }


def _topic(query: Any) -> str | None:
    for topic, queries in POLICY_QUERIES.items():
        if query in queries.values():
            return topic.value
    return None


def interpretation_json(run: Run) -> dict[str, Any] | None:
    """What the planner understood (staff: `stepwise show --json`, the console)."""
    if run.interpretation is None:
        return None
    data = run.interpretation.model_dump(mode="json")
    if data.get("clarify"):
        data["clarify"].pop("nonce", None)  # button data; not for exports
    return data


def case_record(run: Run) -> dict[str, Any]:
    """A stored run as an eval case for a person to label (`stepwise export --cases`).

    `expect` holds what the planner did, as a starting point: the person corrects it.
    """
    interp = run.interpretation
    steps = [
        {
            "tool": s.tool,
            "order_id": s.args.get("order_id"),
            **({"topic": _topic(s.args.get("query"))} if s.tool == "search_policy" else {}),
        }
        for s in run.steps
    ]
    if interp is not None and interp.handoff is not None:
        expect: dict[str, Any] = {"kind": "handoff"}
    elif run.clarify is not None:
        expect = {"kind": "clarify"}
    elif run.unsupported:
        expect = {"kind": "unsupported", "plan_steps": steps}
    elif run.refusal in ("empty", "missing_order_id"):
        expect = {"kind": "refusal", "refusal": run.refusal}
    else:
        expect = {"kind": "plan", "steps": steps}
    context = {"last_order_id": interp.chat_order_id} if interp and interp.chat_order_id else {}
    return {
        "id": f"export-{run.language.value}-{run.id}",
        "category": "exported",
        "lang": run.language.value,
        "text": run.request_text,
        "context": context,
        "expect": expect,
        "run": {"run_id": run.id, "status": run.status.value, "answer": run.answer},
        "needs_label": True,
    }


def export_record(run: Run, timeline: Sequence[TimelineEntry]) -> dict[str, Any]:
    """One line of `stepwise export` (and of the staff console's export): a regression case."""
    return run_json(run) | {
        "user_id": run.user_id,
        "chat_id": run.chat_id,
        "request_text": run.request_text,
        "created_at": run.created_at.isoformat(),
        "timeline": [e.model_dump(mode="json") for e in timeline],
    }


def format_timeline_entry(entry: TimelineEntry) -> str:
    """One timeline entry as one line of plain text: `stepwise show` and the staff `/run`.

    Time to the millisecond (retries and backoffs are that short), then the kind and the
    step with its attempt, then only the fields the entry has, as `name=value`.
    """
    parts = [entry.at.strftime("%H:%M:%S.%f")[:-3], entry.kind.value]
    if entry.step_id:
        parts.append(entry.step_id)
    if entry.attempt:
        parts.append(f"attempt {entry.attempt}")
    if entry.tool:
        parts.append(f"tool={entry.tool}")
    if entry.error_type:
        parts.append(f"error={entry.error_type}")
    if entry.decision:
        parts.append(f"decision={entry.decision}")
    if entry.delay_s is not None:
        parts.append(f"backoff={entry.delay_s:.2f}s")
    if entry.message:
        parts.append(f"— {entry.message}")
    return " ".join(parts)
