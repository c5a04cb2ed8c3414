"""Fixtures shared by every test that talks to the Bot API stand-in over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from standin import StandIn


@pytest.fixture
async def standin() -> AsyncIterator[StandIn]:
    async with StandIn() as server:
        yield server
