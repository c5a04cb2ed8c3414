"""Issue 23 over HTTP: the production bot long-polling the stand-in; what the customer
and staff read is true to what happened."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from standin import StandIn
from tests.harness import start_bot

# -- 12: no warning for a staff menu that has nowhere to go yet ------------------------------


async def test_12_no_warning_for_a_staff_member_who_never_wrote_to_the_bot(
    standin: StandIn, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="bot.application"):
        h = await start_bot(standin, tmp_path / "menu.db")  # STAFF has no chat with the bot
        await h.stop()
    assert [r.getMessage() for r in caplog.records if r.name == "bot.application"] == []
