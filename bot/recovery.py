"""On start and then periodically: finish runs nobody drives, and deliver what never arrived.

Every live process runs this (`keep_recovering`), not only a process that just started:
with several processes on one database (a rolling deploy, replicas), the runs of one that
died are taken over by the others once its leases lapse (`storage.leases`), and a run
whose drive died on a storage error is finished without waiting for a restart.

One pass:

1. `Agent.recover`: take and drive the running runs whose lease lapsed, first showing
   their plan if it never reached the customer (`show_lost_plan`).
2. `deliver_owed`: take the runs whose prompt or answer was committed but never delivered
   (their lease, kept for the delivery, lapsed) and send it once: a paused run's
   Confirm/Cancel prompt again (`TelegramProgress.reoffer`), a finished run's answer
   (`TelegramProgress.redeliver`), within `REDELIVERY_WINDOW`. The delivered mark gives
   the lease back; a failed send leaves it to lapse and a later pass tries again.
3. At start only, `reoffer_lost_prompts`: paused runs without a lease whose prompt has no
   `prompt_shown` (written before leases existed, or paused by a process that does not
   deliver, such as the CLI).

Storage trouble postpones a pass (logged), never ends the loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from functools import partial

from agent_core.agent import Agent
from agent_core.models import EventKind, Run, RunStatus, utcnow
from bot.progress import TelegramProgress
from storage.db import StorageUnavailable
from storage.leases import other_process_line
from storage.records import TimelineEntry
from storage.store import RunStore

log = logging.getLogger(__name__)

# A finished run's answer is sent again for this long after its end; later it is stale.
REDELIVERY_WINDOW = timedelta(hours=24)


async def keep_recovering(
    agent: Agent,
    store: RunStore,
    progress: TelegramProgress,
    *,
    approval_ttl: timedelta,
    reoffer: bool = True,
    every_s: float,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    clock: Callable[[], datetime] = utcnow,
) -> None:
    """The start-up pass, then one pass every `every_s` (half the lease), forever.

    Says once, at start, when another process is live on the same database.
    """
    try:
        others = await store.live_owners()
    except StorageUnavailable:
        others = []
    if others:
        log.warning(other_process_line(others))
    await recover(agent, store, progress, approval_ttl=approval_ttl, reoffer=reoffer, clock=clock)
    while True:
        await sleep(every_s)
        try:
            await recover(
                agent, store, progress, approval_ttl=approval_ttl, reoffer=False, clock=clock
            )
        except Exception:  # a bug in one pass must not end recovery for the process's life
            log.exception("recovery pass failed; trying again in %g s", every_s)


async def recover(
    agent: Agent,
    store: RunStore,
    progress: TelegramProgress,
    *,
    approval_ttl: timedelta,
    reoffer: bool = True,
    clock: Callable[[], datetime] = utcnow,
) -> None:
    """One pass (see the module doc); storage trouble postpones it (logged), never crashes.

    `reoffer=False` leaves out the scan for prompts lost before leases (the periodic
    passes, and the browser demo).
    """
    try:
        runs = await agent.recover(before=partial(show_lost_plan, store, progress))
        delivered = await deliver_owed(agent, store, progress, approval_ttl, clock=clock)
        prompts = (
            await reoffer_lost_prompts(store, progress, approval_ttl, clock=clock) if reoffer else 0
        )
    except StorageUnavailable:
        log.exception("recovery postponed: storage unavailable")
        return
    if runs:
        log.warning("recovered %d interrupted run(s)", len(runs))
    if delivered:
        log.warning("delivered %d undelivered answer(s) or prompt(s)", delivered)
    if prompts:
        log.warning("showed %d lost confirmation prompt(s) again", prompts)


async def show_lost_plan(store: RunStore, progress: TelegramProgress, run: Run) -> None:
    """Before a recovered run goes on: show its plan if it never reached the customer (no
    `plan_shown`: the crash came between the run's first commit and the plan's message)."""
    if not run.steps:
        return
    timeline = await store.history.timeline(run.id)
    if not any(entry.kind is EventKind.PLAN_SHOWN for entry in timeline):
        await progress.show_plan(run)


async def deliver_owed(
    agent: Agent,
    store: RunStore,
    progress: TelegramProgress,
    approval_ttl: timedelta,
    *,
    clock: Callable[[], datetime] = utcnow,
) -> int:
    """Send, once, what was committed and never delivered; the number delivered.

    The runs are taken by lease first (one process sends each) and held while sending,
    so their leases are renewed until the delivered mark gives them back.
    """
    now = clock()
    taken = await store.owed_deliveries(since=now - REDELIVERY_WINDOW)
    delivered = 0
    with agent.working.holding(*taken):
        for run_id in taken:
            run = await store.load_run(run_id)
            if run is None:
                continue
            if run.status is RunStatus.PAUSED:
                fresh = run.pause is not None and run.pause.paused_at >= now - approval_ttl
                done = fresh and await progress.reoffer(run)
            else:
                done = await progress.redeliver(run)
            delivered += int(done)
    return delivered


async def reoffer_lost_prompts(
    store: RunStore,
    progress: TelegramProgress,
    approval_ttl: timedelta,
    *,
    clock: Callable[[], datetime] = utcnow,
) -> int:
    """Send again the buttons of paused runs whose prompt never reached the customer.

    A crash between recording a pause and sending its buttons (or Telegram failing every
    attempt) would otherwise leave the run waiting for a press nobody can make. Delivered
    prompts are recorded on the run (`prompt_shown`) and bound to their message; a prompt
    shown but never bound (before migration 4) is offered again too, since a press counts
    only on the bound message. Only pauses young enough to be confirmed are looked at, and
    only those older than a lease: a younger one's prompt may be on its way from another
    live process (a lost prompt of a lapsed lease is `deliver_owed`'s, which runs first).
    """
    shown, cursor = 0, None
    now = clock()
    since = now - approval_ttl
    settled = now - store.lease.length
    while True:
        page = await store.history.list_runs(
            status=RunStatus.PAUSED, since=since, before=cursor, limit=200
        )
        for item in page.items:
            timeline = await store.history.timeline(item.id)
            run = await store.load_run(item.id)
            if run is None or run.pause is None or run.pause.paused_at > settled:
                continue
            unbound = run.pause.prompt is None and not customer_blocked(timeline)
            if (prompt_lost(timeline) or unbound) and await progress.reoffer(run):
                shown += 1
        if page.next_cursor is None:
            return shown
        cursor = page.next_cursor


def customer_blocked(timeline: list[TimelineEntry]) -> bool:
    """Since the last pause, the customer blocked the bot (a prompt would be refused)."""
    paused = [n for n, entry in enumerate(timeline) if entry.kind is EventKind.STEP_PAUSED]
    after = timeline[paused[-1] + 1 :] if paused else timeline
    return any(e.kind is EventKind.CUSTOMER_BLOCKED for e in after)


def prompt_lost(timeline: list[TimelineEntry]) -> bool:
    """The last pause has neither a `prompt_shown` event nor a note that the customer
    blocked the bot (then showing it again would only be refused again)."""
    paused = [n for n, entry in enumerate(timeline) if entry.kind is EventKind.STEP_PAUSED]
    if not paused:
        return False
    after = timeline[paused[-1] + 1 :]
    shown = any(e.kind is EventKind.PROMPT_SHOWN for e in after)
    blocked = any(e.kind is EventKind.CUSTOMER_BLOCKED for e in after)
    return not (shown or blocked)
