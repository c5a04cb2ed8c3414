"""The replica that holds the poller lease polls, or gives the lease up; over real HTTP
with the Bot API stand-in.

A slow `deleteWebhook` at the first takeover used to be cut off at a third of the lease
and retried at every renewal: the lease stayed held, nothing polled, and readiness said
"standby". Now it gets the Bot API's normal timeout, once; and a holder whose polling
makes no progress for a lease releases the lease, logs why, and says so in readiness.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.application import receiver_of
from bot.polling import POLLER, Poller
from standin import StandIn
from tests.harness import DEMO, start_bot, until
from tests.harness import BotHarness as Bot


def poller_of(bot: Bot) -> Poller:
    receiver = receiver_of(bot.app)
    assert receiver is not None and receiver.poller is not None
    return receiver.poller


async def test_a_slow_delete_webhook_is_waited_for_once_and_the_holder_polls(
    standin: StandIn, tmp_path: Path
) -> None:
    # Slower than a third of the default 3 s lease, the bound it used to run under.
    standin.fail_next("deleteWebhook", times=20, status=None, delay=1.5)
    bot = await start_bot(standin, tmp_path / "bot.db")
    try:
        standin.inject_message(DEMO, DEMO, "/help")
        await until(lambda: bot.bot_texts(DEMO), what="answered")
        assert standin.count_calls("deleteWebhook") == 1
        assert standin.count_calls("getUpdates") >= 1
        assert poller_of(bot).lease_problem() is None
    finally:
        await bot.stop()


async def test_a_holder_that_does_not_poll_releases_the_lease_and_says_so(
    standin: StandIn, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """getUpdates failing: the holder backs off for longer than a lease, so it has not
    polled for a lease: it gives the lease up for a standby, and readiness tells that
    from a standby's "could take it". When Telegram answers again, it polls again."""
    standin.fail_next("getUpdates", times=1000, status=500)
    bot = await start_bot(standin, tmp_path / "bot.db", STEPWISE_LEASE="0.6")
    poller = poller_of(bot)
    try:

        def released() -> bool:
            """Readiness says it released the lease, and the lease is not its own."""
            said = (poller.lease_problem() or "").startswith("released the poller lease")
            holders = bot.query("SELECT owner FROM leases WHERE name = ?", POLLER)
            return said and (holders == [] or holders[0][0] != poller.owner)

        await until(released, what="released, and not held")
        assert "held the lease but had not polled for" in caplog.text

        standin.clear_faults()
        standin.inject_message(DEMO, DEMO, "/help")
        await until(lambda: bot.bot_texts(DEMO), what="answered once Telegram answers")
    finally:
        await bot.stop()
