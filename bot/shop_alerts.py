"""Staff alerts about the shop's order system: broken (its key refused, 5xx through every
retry, a broken contract) or out of reach (connection refused, DNS, TLS, timeouts after
every retry). One alert per episode, and a recovery message when it ends.

An episode is per tool: it starts with a run that stopped on the shop's failure of that
tool (`agent_core.faults`) and ends with the tool's next successful call in a run this
process answers. Its first failure alerts — unless the same (tool, kind) was alerted less
than `ALERT_WINDOW_S` ago (`AlertGate`: a shop flapping up and down is told once per
window) — and further failures within it stay quiet whatever their kind. An episode that
was alerted ends with one "answering again" message; one that was held ends quietly.

In memory, per process, like the other alerts (`bot.alerts`): a restart or a second
replica may alert once more, never zero times. No customer text and no secret: the tool,
the kind, the HTTP tools' message (already scrubbed of the tools file's secrets) clipped
to one line.
"""

from __future__ import annotations

import html
import logging
from dataclasses import dataclass

from agent_core.faults import STOPS_ON_THE_SHOP, fault_kind
from agent_core.http.responses import clip
from agent_core.models import PlanStep, Run, StepStatus
from bot.alerts import ALERT_WINDOW_S, AlertGate
from bot.handoff import HandoffDesk, run_link

log = logging.getLogger(__name__)

# Kinds where nothing answered: the shop is down or out of reach, not refusing us.
UNREACHABLE = frozenset(
    {"connection refused", "DNS failure", "TLS failure", "timeout", "no answer"}
)


def shop_failure(run: Run) -> tuple[PlanStep, str] | None:
    """The step (and kind) of the shop's failure that stopped `run`, if that stopped it."""
    if run.stop_reason not in STOPS_ON_THE_SHOP:
        return None
    for step in run.steps:
        if step.status is StepStatus.FAILED and step.error is not None:
            kind = fault_kind(step.error.type, step.error.message)
            if kind is not None:
                return step, kind
    return None


def answered_tools(run: Run) -> set[str]:
    """The tools that answered in `run` (a step done)."""
    return {step.tool for step in run.steps if step.status is StepStatus.DONE}


@dataclass
class _Episode:
    kind: str
    told: bool
    failures: int = 1


class ShopAlerts:
    """The shop's episodes, per tool (see the module); `after` is told every answered run."""

    def __init__(self, desk: HandoffDesk | None, gate: AlertGate) -> None:
        self.desk = desk
        self.gate = gate
        self._episodes: dict[str, _Episode] = {}

    async def after(self, run: Run) -> list[str]:
        """Alert or tell the recovery `run` shows; returns what was posted ("alert",
        "recovered")."""
        posted = []
        for tool in sorted(answered_tools(run)):
            episode = self._episodes.pop(tool, None)
            if (
                episode is not None
                and episode.told
                and await self._post(recovered_text(tool, episode), "shop recovered")
            ):
                posted.append("recovered")
        failure = shop_failure(run)
        if failure is None:
            return posted
        step, kind = failure
        episode = self._episodes.get(step.tool)
        if episode is None:
            episode = self._episodes[step.tool] = _Episode(kind, told=False, failures=0)
        episode.failures += 1
        # Told once per episode; one held by the gate (or whose post failed) is told at a
        # later failure once the gate lets it.
        if not episode.told and self.gate.due((step.tool, episode.kind)):
            console = self.desk.console_url if self.desk is not None else None
            text = shop_alert_text(run, step, kind, console)
            if await self._post(text, "shop alert"):
                self.gate.sent((step.tool, episode.kind))
                episode.told = True
                posted.append("alert")
        return posted

    async def _post(self, text: str, what: str) -> bool:
        if self.desk is None or self.desk.staff_chat_id is None:
            return False
        return await self.desk.post_in_general(text, what)


def shop_alert_text(run: Run, step: PlanStep, kind: str, console_url: str | None) -> str:
    """What staff read (HTML, English): the tool, the kind, what the shop said (if it
    answered), what to check."""
    esc = html.escape
    said = clip(step.error.message.splitlines()[0] if step.error and step.error.message else "")
    if kind in UNREACHABLE:
        check = (
            "The shop's API did not answer: check that it is up and reachable from the bot's "
            "host (address, DNS, TLS certificate) with <code>stepwise tools check --probe</code>."
        )
    else:
        check = (
            "Check the shop's API key and address in the tools file "
            "(<code>stepwise tools check --probe</code>)."
        )
    return "\n".join(
        [
            "🚨 <b>Order system problem</b>: customers cannot be served by it",
            f"Tool: {esc(step.tool)} · {esc(kind)}",
            f"Shop said: <code>{esc(said)}</code>",
            check,
            f"First run: {run_link(console_url, run.id)}",
            "Customers are told the order system has a problem. Not alerted again until "
            f"it answers again (and at most once per {ALERT_WINDOW_S / 60:g} minutes).",
        ]
    )


def recovered_text(tool: str, episode: _Episode) -> str:
    esc = html.escape
    return "\n".join(
        [
            "✅ <b>Order system answering again</b>",
            f"Tool: {esc(tool)} answered after {episode.failures} run(s) stopped on "
            f"{esc(episode.kind)}.",
        ]
    )
