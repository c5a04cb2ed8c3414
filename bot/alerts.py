"""The staff group learns when the shop's own system is broken (issue 22, item 3).

A run that stopped with a `backend` failure (the shop refused stepwise's key, its server
kept failing after every retry, its answer broke the contract) tells the customer that the
order system has a problem; staff read ONE alert per incident in the staff group's General
topic (no customer topic: it is nobody's conversation), with the tool, the HTTP status and
the first line of what the shop said. The text is the step's error message, which the HTTP
tools already scrubbed of every secret of the tools file (`ToolsConfig.redact`), clipped
again to one line here.

One incident is one (tool, kind of failure) pair: `AlertGate` lets its first alert through
and holds the next ones for `ALERT_WINDOW_S` (10 minutes), so a revoked key does not post
once per customer. The gate is in memory, per process: a restart, or a second `serve`
process, may alert once more; never zero times.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Callable
from typing import Final

from agent_core.http.responses import clip
from agent_core.models import ErrorType, PlanStep, Run, StepStatus
from bot.handoff import HandoffDesk, run_link

ALERT_WINDOW_S: Final = 600.0

_STATUS = re.compile(r"\bHTTP (\d{3})\b")


def backend_failure(run: Run) -> PlanStep | None:
    """The step whose backend failed, if the run stopped for that."""
    if run.stop_reason != ErrorType.BACKEND.value:
        return None
    return next((s for s in run.steps if s.status is StepStatus.FAILED), None)


def incident(step: PlanStep) -> tuple[str, str]:
    """(tool, kind): what one incident is (`HTTP 401`, `contract`, `not JSON` …)."""
    message = step.error.message if step.error else ""
    found = _STATUS.search(message)
    if "breaks the contract" in message:
        kind = "contract"
    elif "not JSON" in message:
        kind = "not JSON"
    elif found is not None:
        kind = f"HTTP {found.group(1)}"
    else:
        kind = "backend"
    return step.tool, kind


def due(last_sent: float | None, now: float, window_s: float = ALERT_WINDOW_S) -> bool:
    """Whether an incident alerts now: never alerted, or the last alert is `window_s` old."""
    return last_sent is None or now - last_sent >= window_s


class AlertGate:
    """The last alert of each incident, in memory (see the module docstring)."""

    def __init__(
        self, window_s: float = ALERT_WINDOW_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.window_s = window_s
        self._clock = clock
        self._sent: dict[tuple[str, str], float] = {}

    def allow(self, key: tuple[str, str]) -> bool:
        """True (and remembered) when `key` is due; False while its window is open."""
        now = self._clock()
        if not due(self._sent.get(key), now, self.window_s):
            return False
        self._sent[key] = now
        return True


def backend_alert_text(run: Run, step: PlanStep, console_url: str | None) -> str:
    """What staff read (HTML, English): the tool, the status, what the shop said."""
    esc = html.escape
    tool, kind = incident(step)
    said = clip(step.error.message.splitlines()[0] if step.error and step.error.message else "")
    return "\n".join(
        [
            "🚨 <b>Order system problem</b>: customers cannot be served by it",
            f"Tool: {esc(tool)} · {esc(kind)}",
            f"Shop said: <code>{esc(said)}</code>",
            "Check the shop's API key and address in the tools file "
            "(<code>stepwise tools check --probe</code>).",
            f"First run: {run_link(console_url, run.id)}",
            f"Customers are told the order system has a problem. The same problem is not "
            f"alerted again for {ALERT_WINDOW_S / 60:g} minutes.",
        ]
    )


async def alert_backend(desk: HandoffDesk, run: Run, gate: AlertGate) -> bool:
    """Post the alert of a run's backend failure, once per incident and window."""
    step = backend_failure(run)
    if step is None or desk.staff_chat_id is None or not gate.allow(incident(step)):
        return False
    text = backend_alert_text(run, step, desk.console_url)
    return await desk.post_in_general(text, "backend alert")
