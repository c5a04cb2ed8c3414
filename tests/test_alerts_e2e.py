"""The staff alerts of the bot's own incidents (issue 25, item 5) end to end: the
production bot long-polling the stand-in, a forum as the staff group, the alert read in
its General topic. Each incident is fed through its real seam (the rate limiter's 429s,
the lease keeper's renewals, the inbox backlog the health checks read); the alerts'
clock is injected, so windows pass without sleeping.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.alerts import ALERT_WINDOW_S, FLOOD_WINDOW_S, AlertGate, StaffAlerts
from bot.application import bot_of, receiver_of
from bot.health import Health
from standin import ShownMessage, StandIn
from tests.harness import DEMO, BotHarness, until
from tests.test_handoff_e2e import FORUM, staff_forum, staffed


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def bot(standin: StandIn, tmp_path: Path) -> AsyncIterator[BotHarness]:
    staff_forum(standin)
    harness = await staffed(standin, tmp_path / "alerts.db")
    try:
        yield harness
    finally:
        await harness.stop()


@pytest.fixture
async def impatient_bot(standin: StandIn, tmp_path: Path) -> AsyncIterator[BotHarness]:
    """`bot` whose writes give up on a locked database after 1 s, not the default 5 s: a
    test that locks the database on purpose then waits seconds, not half a minute."""
    staff_forum(standin)
    harness = await staffed(standin, tmp_path / "alerts.db", STEPWISE_DB_TIMEOUT="1")
    try:
        yield harness
    finally:
        await harness.stop()


def on_clock(h: BotHarness, clock: Clock) -> StaffAlerts:
    """The bot's staff alerts (hooked as `stepwise serve` hooks them), on `clock`."""
    alerts = bot_of(h.app).staff_alerts
    alerts.clock = clock
    alerts.gate = AlertGate(clock=clock)
    return alerts


def general(standin: StandIn, title: str) -> list[ShownMessage]:
    return [
        m
        for m in standin.chat_messages(FORUM)
        if m.message_thread_id is None and title in (m.text or "")
    ]


async def test_a_burst_of_429s_is_one_alert_and_the_alerts_own_429_does_not_feed_it(
    bot: BotHarness,
) -> None:
    h, clock = bot, Clock()
    alerts = on_clock(h, clock)
    alerts.floods_max = 2  # more than two 429s in a minute
    h.standin.fail_next("sendMessage", 3, status=429, retry_after=1, chat_id=DEMO)
    h.standin.inject_message(DEMO, DEMO, "where is A1001", first_name="Ada")
    await h.until_text(DEMO, "A1001", within=30)  # the limiter waited and retried
    assert len(alerts.floods) == 3
    # The alert's own post meets flood control too: retried, and not counted.
    h.standin.fail_next("sendMessage", 1, status=429, retry_after=1, chat_id=FORUM)
    assert await alerts.check() == ["telegram 429"]
    posts = h.standin.calls("sendMessage", chat_id=FORUM)
    assert [c.status for c in posts] == [429, 200]  # its own 429, then the alert
    assert len(alerts.floods) == 3
    assert await alerts.check() == []
    (alert,) = general(h.standin, "Telegram flood control")
    text = alert.text or ""
    assert "429 (Too Many Requests) 3 times" in text
    assert "Ada" not in text and "A1001" not in text and str(DEMO) not in text
    clock.now += FLOOD_WINDOW_S
    assert await alerts.check() == []  # the burst is over; its alert made no new one
    assert len(general(h.standin, "Telegram flood control")) == 1


async def test_leases_failing_to_renew_are_one_alert_until_a_renewal_works(
    impatient_bot: BotHarness,
) -> None:
    h, clock = impatient_bot, Clock()
    alerts = on_clock(h, clock)
    keeper = h.runtime.keeper
    assert keeper is not None and keeper.on_renewal == alerts.renewal
    keeper.heartbeat = True  # as `serve` keeps it: a write every tick
    blocker = sqlite3.connect(h.db, isolation_level=None, timeout=10)
    blocker.execute("BEGIN IMMEDIATE")  # the database refuses every other write
    try:
        for _ in range(5):
            await keeper.tick()
            await alerts.check()
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    (alert,) = general(h.standin, "Run leases not renewed")
    assert "3 renewals in a row failed" in (alert.text or "")
    await keeper.tick()  # the database writes again
    assert alerts.renewals[-1] is True
    assert await alerts.check() == []
    assert len(general(h.standin, "Run leases not renewed")) == 1


def fill_backlog(db: Path, n: int, first: int = 0) -> None:
    """`n` updates stored and claimed by a live replica elsewhere: waiting, not ours."""
    with sqlite3.connect(db) as conn:
        conn.executemany(
            "INSERT INTO inbox (update_id, body, received_at, owner, lease_until)"
            " VALUES (?, '{}', ?, 'elsewhere:1:feed', ?)",
            [(9_000_000 + first + i, time.time(), time.time() + 3600) for i in range(n)],
        )
    conn.close()


async def test_a_backlog_above_its_bound_is_one_alert_while_it_stays_above(
    bot: BotHarness,
) -> None:
    h, clock = bot, Clock()
    alerts = on_clock(h, clock)
    health = Health(h.app, h.runtime.store, backlog_max=3, cache_s=0, clock=clock)
    assert await alerts.check(await health.backlog()) == []
    fill_backlog(h.db, 4)
    assert await health.backlog() == (4, 3)
    assert await alerts.check(await health.backlog()) == ["inbox backlog"]
    fill_backlog(h.db, 2, first=100)
    for _ in range(3):  # still above (more, even): the same incident, not told again
        clock.now += 30
        assert await alerts.check(await health.backlog()) == []
    (alert,) = general(h.standin, "Inbox backlog above its bound")
    assert "4 update(s) waiting to be processed (bound 3" in (alert.text or "")
    assert not (await health.ready()).ok  # the same bound /readyz fails at

    with sqlite3.connect(h.db) as conn:  # worked off: the incident ends
        conn.execute("UPDATE inbox SET processed_at = ? WHERE owner = 'elsewhere:1:feed'", (1.0,))
    conn.close()
    assert await alerts.check(await health.backlog()) == []
    fill_backlog(h.db, 3, first=200)
    clock.now += ALERT_WINDOW_S
    assert await alerts.check(await health.backlog()) == ["inbox backlog"]  # a new incident
    assert len(general(h.standin, "Inbox backlog above its bound")) == 2


def steal_poller_lease(db: Path) -> None:
    """Another replica takes the poller lease (as after this one stalled past it)."""
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE leases SET owner = 'elsewhere:1:feed', expires_at = ? WHERE name = 'poller'",
            (time.time() + 3600,),
        )
    conn.close()


def give_poller_lease_back(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE leases SET expires_at = 0 WHERE name = 'poller'")
    conn.close()


async def test_the_poller_lease_lost_twice_is_one_alert(bot: BotHarness) -> None:
    h, clock = bot, Clock()
    alerts = on_clock(h, clock)
    receiver = receiver_of(h.app)
    assert receiver is not None and receiver.poller is not None
    poller = receiver.poller
    for lost in (1, 2):
        await until(poller.holding, what="polling")
        steal_poller_lease(h.db)
        await until(lambda: not poller.holding(), what="polling stopped")
        assert len(alerts.losses) == lost
        assert await alerts.check() == ([] if lost == 1 else ["poller lease"])
        give_poller_lease_back(h.db)
    await until(poller.holding, what="polling again")
    assert await alerts.check() == []
    (alert,) = general(h.standin, "Poller lease lost repeatedly")
    assert "Lost 2 times in 10 minutes" in (alert.text or "")
