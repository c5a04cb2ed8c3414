"""Fixtures shared by every test that talks to the Bot API stand-in over HTTP, and the
storage backends every storage test runs on (`tests/storage_backends.py`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from standin import StandIn
from tests.storage_backends import (
    deselect_without_server,
    postgres_backend,
    postgres_report,
    store_backend,
)

__all__ = ["postgres_backend", "standin", "store_backend"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    deselect_without_server(config, items)


def pytest_report_collectionfinish(config: pytest.Config) -> list[str]:
    return postgres_report()


@pytest.fixture
async def standin() -> AsyncIterator[StandIn]:
    async with StandIn() as server:
        yield server
