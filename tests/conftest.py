"""Fixtures shared by every test that talks to the Bot API stand-in over HTTP.

The `standin` fixture is spec-checked: after the test, every request made to it must
conform to the vendored Bot API specification and every object it answered or delivered
must be shaped like the spec's type (tests/botapi). A test that needs other stand-in
settings (e.g. flood limits) marks itself `@pytest.mark.standin(flood=FloodLimits(...))`;
the mark's keyword arguments go to `StandIn(...)`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from standin import StandIn
from tests.botapi import assert_conforms


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "standin(**options): keyword arguments for the shared StandIn fixture"
    )


@pytest.fixture
async def standin(request: pytest.FixtureRequest) -> AsyncIterator[StandIn]:
    mark = request.node.get_closest_marker("standin")
    options = dict(mark.kwargs) if mark is not None else {}
    async with StandIn(**options) as server:
        yield server
    assert_conforms(server)
