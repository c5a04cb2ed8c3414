"""What storage gives back to readers: run summaries, timeline entries, failure counts,
and the documented JSON shape of a run (CLI `--json`, `stepwise export`, console export).

Read models only; how they are written and queried lives in `storage.runs` and
`storage.history`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from agent_core.models import EventKind, Language, Run, RunStatus


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
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None


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
