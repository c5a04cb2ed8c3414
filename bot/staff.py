"""Text for the staff commands (/runs, /run, /stats), HTML-escaped for Telegram."""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any

from agent_core.answers.compose import step_progress
from agent_core.models import Run, RunStatus
from storage.history import HandoffDay
from storage.records import (
    FailureCount,
    RunSummary,
    TimelineEntry,
    delivered_answer,
    format_timeline_entry,
)


def format_runs_page(items: Sequence[RunSummary], status: RunStatus | None, offset: int) -> str:
    title = f"Runs ({status.value})" if status else "Recent runs"
    if not items:
        return f"<b>{title}</b>\nNo runs."
    lines = [f"<b>{title}</b> — from #{offset + 1}"]
    for item in items:
        when = item.created_at.strftime("%m-%d %H:%M")
        text = item.request_text.replace("\n", " ")
        text = text if len(text) <= 40 else text[:39] + "…"
        lines.append(
            f"<code>{item.id}</code> {when} {item.status.value}"
            f" · user {item.user_id} · {item.step_count} steps"
            + (f" · {item.retries} retries" if item.retries else "")
            + f"\n  {escape(text)}"
        )
    lines.append("\nOpen one with /run &lt;id&gt;")
    return "\n".join(lines)


def format_timeline(run: Run, timeline: Sequence[TimelineEntry]) -> str:
    lines = [
        f"<b>Run</b> <code>{run.id}</code> · {run.status.value} · {run.language.value}",
        f"user {run.user_id} · chat {run.chat_id} · trace <code>{run.trace_id}</code>",
        f"request: {escape(run.request_text)}",
        "",
        "<b>Steps</b>",
    ]
    for step in run.steps:
        lines.append(escape(step_progress(step, run)))
        lines.append(f"  tool {escape(step.tool)} {escape(_short(step.args))}")
        if step.observation is not None:
            lines.append(f"  observed {escape(_short(step.observation))}")
        if step.error is not None:
            lines.append(f"  error {step.error.type.value}: {escape(step.error.message)}")
        if step.approval is not None:
            verb = "confirmed" if step.approval.approved else "cancelled"
            when = step.approval.at.strftime("%Y-%m-%d %H:%M:%S")
            lines.append(f"  {verb} by {step.approval.by_user_id} at {when}")
    lines += ["", "<b>Timeline</b>"]
    lines += [escape(format_timeline_entry(entry)) for entry in timeline]
    sent = delivered_answer(timeline)  # as the customer saw it, when it was delivered
    lines += ["", "<b>Answer</b>", escape(run.answer or "" if sent is None else sent)]
    return "\n".join(lines)


def format_stats(
    periods: Sequence[tuple[str, dict[str, int], Sequence[FailureCount]]],
) -> str:
    lines: list[str] = []
    for label, statuses, failures in periods:
        lines.append(f"<b>{escape(label)}</b>")
        total = sum(statuses.values())
        lines.append(
            f"runs: {total}" + "".join(f" · {escape(k)} {v}" for k, v in sorted(statuses.items()))
        )
        if failures:
            lines.append("failures by type and tool:")
            lines += [
                f"  {escape(f.error_type)} · {escape(f.tool or '-')}: {f.count}" for f in failures
            ]
        else:
            lines.append("no failures")
        lines.append("")
    return "\n".join(lines).strip()


def format_handoff_stats(days: Sequence[HandoffDay], median_first_reply_s: float | None) -> str:
    """Handoffs to a person per day and the median wait for the first staff reply."""
    lines = ["<b>Handoffs to a person, last 7 days</b>"]
    if not days:
        lines.append("none")
    lines += [f"{day.day.isoformat()}: {day.opened}" for day in days]
    wait = "no staff reply yet" if median_first_reply_s is None else _duration(median_first_reply_s)
    lines.append(f"median time to first staff reply: {wait}")
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
