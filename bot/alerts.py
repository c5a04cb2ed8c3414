"""Staff alerts in the staff group's General topic: the shop's system broken or out of
reach (issue 22 item 3, issue 37 item 5: `bot.shop_alerts`, one per episode with a
recovery message) and the bot's own incidents (issue 25, item 5).

A shop incident is one (tool, kind of failure) pair (`incident`): `AlertGate` lets its
first alert through and holds the next ones for `ALERT_WINDOW_S` (10 minutes), so a
revoked key or a shop that is down does not post once per customer. The gate is in
memory, per process: a restart, or a second `serve` process, may alert once more; never
zero times.

The bot's own incidents (`StaffAlerts`) go through the same gate and `post_in_general`:

* the inbox backlog at or above `STEPWISE_READY_BACKLOG_MAX` (the bound `/readyz` fails
  at), read from the health checks every `WATCH_EVERY_S`;
* run leases not renewed `RENEWALS_FAILED` times in a row (the lease keeper's results:
  a lease survives two failed renewals, so the third means other replicas may take the
  runs over), or the poller lease lost more than once in `LOSS_WINDOW_S`;
* Telegram's flood control: more than `FLOODS_MAX` answers 429 in `FLOOD_WINDOW_S`
  (the rate limiter's 429s). The alerts' own calls are not counted (`UNCOUNTED_429`),
  so an alert about 429s, itself sent through the limiter, cannot feed itself.

Each is a condition decided by a pure function of its history (`backlog_over`,
`failing_in_row`, `burst`); an incident starts when its condition starts holding and ends
when it clears. One alert per incident (`incident_alert`), and at most one per kind per
`ALERT_WINDOW_S` (the gate): a condition that flaps within the window is told once; one
still holding when the window ends is told then. A post that failed is tried again at the
next check. No secret and no customer text: counts, bounds, the replica's host and pid.

An unknown-outcome write (`unclear_change`) is about one customer's order: it stays ONE
alert, in that customer's topic (`HandoffDesk.alert_unclear_change`, where a person checks
it at the shop and answers the customer), keyed by its run in the same gate so an answer
re-sent by this process does not tell staff twice; it is not repeated in General.
"""

from __future__ import annotations

import asyncio
import html
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Final

from agent_core.faults import fault_kind
from agent_core.models import PlanStep
from bot.handoff import HandoffDesk
from bot.ratelimit import UNCOUNTED_429

log = logging.getLogger(__name__)

ALERT_WINDOW_S: Final = 600.0
WATCH_EVERY_S: Final = 5.0
RENEWALS_FAILED: Final = 3
LOSS_WINDOW_S: Final = 600.0
LOSSES_MAX: Final = 1  # more than this many poller lease losses in the window
FLOOD_WINDOW_S: Final = 60.0
FLOODS_MAX: Final = 5  # more than this many 429s in the window


def incident(step: PlanStep) -> tuple[str, str]:
    """(tool, kind): what one incident of the shop is (`HTTP 401`, `contract`,
    `connection refused` …: `agent_core.faults`)."""
    error = step.error
    kind = fault_kind(error.type, error.message) if error is not None else None
    return step.tool, kind or "backend"


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
        if not self.due(key):
            return False
        self.sent(key)
        return True

    def due(self, key: tuple[str, str]) -> bool:
        """Whether `key` may alert now (nothing remembered)."""
        return due(self._sent.get(key), self._clock(), self.window_s)

    def sent(self, key: tuple[str, str]) -> None:
        """`key` was alerted now."""
        self._sent[key] = self._clock()


# -- the bot's own incidents (issue 25, item 5) -----------------------------------------


def backlog_over(waiting: int | None, bound: int) -> bool:
    """The inbox backlog is at or above its bound (where `/readyz` fails); None: unknown."""
    return waiting is not None and waiting >= bound


def failing_in_row(results: Sequence[bool], times: int) -> bool:
    """The last `times` results (oldest first, True: it worked) all failed."""
    return len(results) >= times and not any(results[-times:])


def burst(stamps: Iterable[float], now: float, window_s: float, more_than: int) -> bool:
    """More than `more_than` events in the last `window_s` seconds."""
    return sum(1 for t in stamps if now - t < window_s) > more_than


def incident_alert(holds: bool, told: bool, gate_due: bool) -> bool:
    """Alert now: the condition holds, this incident was not told yet, the gate lets it."""
    return holds and not told and gate_due


BACKLOG: Final = ("incident", "inbox backlog")
RENEWALS: Final = ("incident", "run leases")
POLLER_LOST: Final = ("incident", "poller lease")
FLOOD: Final = ("incident", "telegram 429")


class StaffAlerts:
    """The bot's own incidents, fed by sync hooks (the lease keeper's renewals, the
    poller's losses, the rate limiter's 429s) and the backlog the health checks read;
    `check` decides and posts (see the module docstring). In memory, per process."""

    def __init__(
        self,
        desk: HandoffDesk | None,
        gate: AlertGate,
        *,
        replica: str = "",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.desk = desk
        self.gate = gate
        self.replica = short_replica(replica)
        self.clock = clock
        # The thresholds (the module's constants; a test may lower them).
        self.losses_max = LOSSES_MAX
        self.floods_max = FLOODS_MAX
        self.renewals: deque[bool] = deque(maxlen=RENEWALS_FAILED)
        self.losses: deque[float] = deque(maxlen=64)
        self.floods: deque[float] = deque(maxlen=256)
        self._told: set[tuple[str, str]] = set()
        self._lock = asyncio.Lock()

    # -- the hooks (sync, cheap: called from the keeper, the poller, the limiter) --------

    def renewal(self, ok: bool) -> None:
        self.renewals.append(ok)

    def poller_lost(self) -> None:
        self.losses.append(self.clock())

    def flooded(self) -> None:
        self.floods.append(self.clock())

    # -- deciding ------------------------------------------------------------------------

    async def check(self, backlog: tuple[int, int] | None = None) -> list[str]:
        """Decide every incident now and post the alerts due; returns their kinds.
        `backlog`: (waiting, bound) as the health checks last read it, None if unknown."""
        if self.desk is None or self.desk.staff_chat_id is None:
            return []
        now = self.clock()
        waiting, bound = backlog if backlog is not None else (None, 0)
        lost = sum(1 for t in self.losses if now - t < LOSS_WINDOW_S)
        floods = sum(1 for t in self.floods if now - t < FLOOD_WINDOW_S)
        # An unread backlog (the database did not answer) neither starts nor ends one.
        over = None if waiting is None else backlog_over(waiting, bound)
        found: list[tuple[tuple[str, str], bool | None, Callable[[], str]]] = [
            (BACKLOG, over, lambda: backlog_text(waiting or 0, bound)),
            (
                RENEWALS,
                failing_in_row(list(self.renewals), RENEWALS_FAILED),
                lambda: renewals_text(RENEWALS_FAILED, self.replica),
            ),
            (
                POLLER_LOST,
                burst(self.losses, now, LOSS_WINDOW_S, self.losses_max),
                lambda: poller_text(lost, self.replica),
            ),
            (
                FLOOD,
                burst(self.floods, now, FLOOD_WINDOW_S, self.floods_max),
                lambda: flood_text(floods, self.replica),
            ),
        ]
        posted = []
        async with self._lock:
            for key, holds, text in found:
                if await self._incident(key, holds, text):
                    posted.append(key[1])
        return posted

    async def _incident(
        self, key: tuple[str, str], holds: bool | None, text: Callable[[], str]
    ) -> bool:
        if holds is None:  # unknown: the incident stays as it was
            return False
        if not holds:
            self._told.discard(key)  # the incident ended: a new one may alert again
            return False
        if not incident_alert(holds, key in self._told, self.gate.due(key)):
            return False
        assert self.desk is not None
        quiet = UNCOUNTED_429.set(True)  # an alert's own 429s are not an incident
        try:
            posted = await self.desk.post_in_general(text(), f"{key[1]} alert")
        finally:
            UNCOUNTED_429.reset(quiet)
        if posted:  # not posted: tried again at the next check
            self.gate.sent(key)
            self._told.add(key)
        return posted

    async def watch(
        self,
        backlog: Callable[[], Awaitable[tuple[int, int] | None]],
        every_s: float = WATCH_EVERY_S,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """`check` every `every_s`, with the backlog the health checks read (until
        cancelled; a failing check is logged, never ends the loop)."""
        while True:
            try:
                await self.check(await backlog())
            except Exception:
                log.exception("staff alerts: check failed; trying again")
            await sleep(every_s)


def short_replica(owner: str) -> str:
    """A replica's owner id as staff read it: host:pid (not the random part)."""
    return ":".join(owner.split(":")[:2])


def _replica(replica: str) -> str:
    return f" on replica <code>{html.escape(replica)}</code>" if replica else ""


def backlog_text(waiting: int, bound: int) -> str:
    return "\n".join(
        [
            "📥 <b>Inbox backlog above its bound</b>",
            f"{waiting} update(s) waiting to be processed (bound {bound}, "
            "<code>STEPWISE_READY_BACKLOG_MAX</code>): customers wait longer for answers, "
            "and <code>/readyz</code> fails.",
            "Check that a replica processes updates (its logs, <code>/status</code>). "
            "Not alerted again until the backlog is back under the bound.",
        ]
    )


def renewals_text(times: int, replica: str) -> str:
    return "\n".join(
        [
            f"🔒 <b>Run leases not renewed</b>{_replica(replica)}",
            f"{times} renewals in a row failed: another replica may take its runs over. "
            "Check the database (<code>stepwise doctor</code>).",
            "Not alerted again until a renewal works.",
        ]
    )


def poller_text(lost: int, replica: str) -> str:
    return "\n".join(
        [
            f"🔒 <b>Poller lease lost repeatedly</b>{_replica(replica)}",
            f"Lost {lost} times in {LOSS_WINDOW_S / 60:g} minutes: long polling moves "
            "between replicas. Check the database and the replicas' clocks "
            "(<code>stepwise doctor</code>).",
            "Not alerted again until it stops.",
        ]
    )


def flood_text(floods: int, replica: str) -> str:
    return "\n".join(
        [
            f"🐢 <b>Telegram flood control</b>{_replica(replica)}",
            f"Telegram answered 429 (Too Many Requests) {floods} times in the last "
            f"{FLOOD_WINDOW_S:g} s: messages to customers are delayed.",
            "Check for a burst of traffic or replicas not sharing one database. "
            "Not alerted again until it stops.",
        ]
    )
