"""Fixtures shared by every test that talks to the Bot API stand-in over HTTP, and the
storage backends every storage test runs on (`tests/storage_backends.py`).

The `standin` fixture is spec-checked: after the test, every request made to it must
conform to the vendored Bot API specification and every object it answered or delivered
must be shaped like the spec's type (tests/botapi). A test that needs other stand-in
settings (e.g. flood limits) marks itself `@pytest.mark.standin(flood=FloodLimits(...))`;
the mark's keyword arguments go to `StandIn(...)`. Unmarked, the stand-in paces a chat at
`TEST_CHAT_INTERVAL_S` (tests/harness.py), not Telegram's one message a second.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import AsyncIterator

import pytest

from standin import FloodLimits, StandIn
from tests.botapi import assert_conforms
from tests.harness import PATIENCE, TEST_CHAT_INTERVAL_S
from tests.storage_backends import (
    deselect_without_server,
    postgres_backend,
    postgres_report,
    store_backend,
)

__all__ = ["postgres_backend", "standin", "store_backend"]

# Ctrl-C as a terminal delivers it. A test run started in the background of a non-interactive
# shell (`cmd &` in a script, or under nohup) inherits SIGINT *ignored*, and so would every
# process a test starts: `stepwise ask` and `tee` would shrug off the SIGINT that the
# Ctrl-C tests send. A Python handler is reset to the default on exec, an ignored signal
# is not, so the test process takes Python's own handler back once, here.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    with contextlib.suppress(ValueError):  # not the main thread: leave it as it is
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    deselect_without_server(config, items)


def pytest_report_collectionfinish(config: pytest.Config) -> list[str]:
    return postgres_report()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "standin(**options): keyword arguments for the shared StandIn fixture"
    )


@pytest.fixture
async def standin(request: pytest.FixtureRequest) -> AsyncIterator[StandIn]:
    mark = request.node.get_closest_marker("standin")
    options = dict(mark.kwargs) if mark is not None else {}
    options.setdefault("patience", PATIENCE)
    options.setdefault("flood", FloodLimits(per_chat_interval=TEST_CHAT_INTERVAL_S))
    async with StandIn(**options) as server:
        yield server
    assert_conforms(server)
