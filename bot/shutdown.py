"""A stop with a deadline: what `serve` does on SIGTERM.

A tool may take up to a minute (`timeout_s`), longer than a service manager waits after
SIGTERM before it sends SIGKILL (systemd's `TimeoutStopSec`). Waiting for everything, as
a plain stop does, therefore ended a planned restart in a SIGKILL whenever a slow call
was in flight. So a stop is bounded:

1. receiving has already stopped (the caller: no new update is taken);
2. the updates in hand get until the deadline to finish (their claims still renewed);
3. past it, their handlings are cancelled — a run stops between two awaits, as in a
   crash, its journal consistent — and, once nothing is handled, this process's claims
   on the inbox are given up (`give_up_claims`), so any process takes them at its next
   sweep (updates other processes left are not taken while stopping). Run leases are
   given up when the store closes (`storage.leases`, `LET_GO`): the next start, or
   another replica, resumes those runs at once (a read is sent again; a change is
   reconciled first).

One line says what was left and why. A cancelled handling never marks its update
processed, so nothing in hand is lost: it is finished once, by whoever resumes it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from bot.inbox import Intake, TrackingApplication
from storage.db import StorageUnavailable

log = logging.getLogger(__name__)

# The default deadline (`STEPWISE_SHUTDOWN_DEADLINE`), below the unit's TimeoutStopSec (30).
DEFAULT_DEADLINE_S = 20.0


@dataclass(frozen=True)
class Left:
    """What a stop left unfinished at its deadline."""

    updates: tuple[int, ...]
    runs: tuple[str, ...]

    def line(self, deadline_s: float) -> str:
        runs = ", ".join(self.runs) or "none"
        return (
            f"shutdown: the deadline of {deadline_s:g} s passed with {len(self.updates)} "
            f"update(s) in hand (runs: {runs}); they were stopped mid-way and their leases "
            "given up: the next start or another replica resumes them"
        )


async def finish_in_hand(
    intake: Intake,
    application: Any,
    deadline_s: float,
    *,
    runs: Callable[[], Collection[str]] = tuple,
) -> Left | None:
    """Let the updates in hand finish for up to `deadline_s`; None when they all did.
    Otherwise cancel them (and every task their handlers started) and return what was
    left (`runs`: the runs being worked on, named in the line)."""
    intake.stopping = True  # the keeper renews the claims in hand, takes no new ones
    pending = set(intake.working)
    if pending:
        await asyncio.wait(pending, timeout=deadline_s)
    if not any(not task.done() for task in intake.working):
        return None
    left = Left(tuple(intake.handling()), tuple(sorted(runs())))
    started = application.started if isinstance(application, TrackingApplication) else set()
    doomed = {*intake.working, *started}
    for task in doomed:
        task.cancel()
    # Cancelled tasks end at their next await: a run mid-call stops inside the tool call.
    await asyncio.gather(*doomed, return_exceptions=True)
    log.warning(left.line(deadline_s))
    return left


async def give_up_claims(intake: Intake) -> None:
    """Once nothing is handled any more: this process's claims on updates it did not mark
    processed (stopped at the deadline, or taken by the keeper's sweep while stopping)
    are given up, so any process takes them at its next sweep rather than after the
    claim's lease."""
    try:
        await intake.inbox.release_claims(intake.owner)
    except StorageUnavailable as exc:  # the claims then run out on their own (lease_s)
        log.warning("shutdown: could not give up the inbox claims: %s", exc)
