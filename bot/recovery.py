"""On start: finish runs a crash interrupted, and show again prompts that never arrived."""

from __future__ import annotations

import logging
from datetime import timedelta

from agent_core.agent import Agent
from agent_core.models import EventKind, RunStatus, utcnow
from bot.progress import TelegramProgress
from storage.db import StorageUnavailable
from storage.records import TimelineEntry
from storage.store import RunStore

log = logging.getLogger(__name__)


async def recover(
    agent: Agent,
    store: RunStore,
    progress: TelegramProgress,
    *,
    approval_ttl: timedelta,
    reoffer: bool = True,
) -> None:
    """Background start-up work; storage trouble postpones it (logged), never crashes.

    `reoffer=False` only finishes interrupted runs (the browser demo).
    """
    try:
        runs = await agent.recover()
        prompts = await reoffer_lost_prompts(store, progress, approval_ttl) if reoffer else 0
    except StorageUnavailable:
        log.exception("recovery postponed: storage unavailable")
        return
    if runs:
        log.warning("recovered %d interrupted run(s)", len(runs))
    if prompts:
        log.warning("showed %d lost confirmation prompt(s) again", prompts)


async def reoffer_lost_prompts(
    store: RunStore, progress: TelegramProgress, approval_ttl: timedelta
) -> int:
    """Send again the buttons of paused runs whose prompt never reached the customer.

    A crash between recording a pause and sending its buttons (or Telegram failing every
    attempt) would otherwise leave the run waiting for a press nobody can make. Delivered
    prompts are recorded on the run (`prompt_shown`) and bound to their message; a prompt
    shown but never bound (before migration 4) is offered again too, since a press counts
    only on the bound message. Only pauses young enough to be confirmed are looked at.
    """
    shown, cursor = 0, None
    since = utcnow() - approval_ttl
    while True:
        page = await store.history.list_runs(
            status=RunStatus.PAUSED, since=since, before=cursor, limit=200
        )
        for item in page.items:
            timeline = await store.history.timeline(item.id)
            run = await store.load_run(item.id)
            if run is None or run.pause is None:
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
