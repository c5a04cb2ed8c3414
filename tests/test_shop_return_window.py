"""A seed's `return_window_days` is the shop's return window, on both backends.

It used to be written into the `seeded` marker and read from a row that was never written,
so every shop had the default 7 days whatever its seed said.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent_core.execution.tools import ToolContext, ToolRegistry
from agent_core.models import ErrorType, ToolError, ToolOk
from storage.shop.seed import (
    DEFAULT_RETURN_WINDOW_DAYS,
    DEFAULT_SEED_PATH,
    SEEDED_KEY,
    return_window_of,
)
from storage.shop.tools import shop_tools
from tests.storage_backends import Backend

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
DEMO_USER = 10001


def _seed(tmp_path: Path, **changes: Any) -> Path:
    """The bundled seed with `changes`; A1002 delivered 2 days before NOW, A1006 30."""
    seed = json.loads(DEFAULT_SEED_PATH.read_text(encoding="utf-8"))
    seed.update(changes)
    path = tmp_path / "seed.json"
    path.write_text(json.dumps(seed), encoding="utf-8")
    return path


async def _return(tools: ToolRegistry, order_id: str, step: str) -> ToolOk | ToolError:
    ctx = ToolContext(user_id=DEMO_USER, trace_id="t", run_id="run-1", step_id=step)
    return await tools.call("request_return", {"order_id": order_id}, ctx)


@pytest.mark.parametrize(("days", "open_for_a1006"), [(45, True), (1, False)])
async def test_the_seeds_return_window_decides(
    store_backend: Backend, tmp_path: Path, days: int, open_for_a1006: bool
) -> None:
    shop = await store_backend.open_shop(
        seed_path=_seed(tmp_path, return_window_days=days), clock=lambda: NOW
    )
    try:
        tools = ToolRegistry(shop_tools(shop))
        # A1006 was delivered 30 days ago: past the default 7 days, within 45.
        late = await _return(tools, "A1006", "s1")
        if open_for_a1006:
            assert isinstance(late, ToolOk), late
        else:
            assert isinstance(late, ToolError) and late.code == "window_closed", late
        # A1002 was delivered 2 days ago: within 7 and 45 days, past 1.
        recent = await _return(tools, "A1002", "s2")
        if days >= 2:
            assert isinstance(recent, ToolOk), recent
        else:
            assert isinstance(recent, ToolError), recent
            assert recent.error_type is ErrorType.INVALID_ARGUMENTS
            assert recent.code == "window_closed"
    finally:
        await shop.close()


async def test_a_reopened_shop_keeps_its_window(store_backend: Backend, tmp_path: Path) -> None:
    """The window is read from the database, not the seed file: a shop opened again (the
    seed file gone) still has the window it was seeded with."""
    seed = _seed(tmp_path, return_window_days=45)
    first = await store_backend.open_shop(seed_path=seed, clock=lambda: NOW)
    await first.close()
    seed.unlink()
    shop = await store_backend.open_shop(seed_path=seed, clock=lambda: NOW + timedelta(days=10))
    try:
        # A1006: 40 days after delivery, inside 45.
        assert isinstance(await _return(ToolRegistry(shop_tools(shop)), "A1006", "s1"), ToolOk)
    finally:
        await shop.close()


@pytest.mark.parametrize(
    ("marker", "days"),
    [
        (None, DEFAULT_RETURN_WINDOW_DAYS),  # not seeded
        (json.dumps({"seed": "x", "orders": 3}), DEFAULT_RETURN_WINDOW_DAYS),  # seeded before
        (json.dumps({"return_window_days": 30}), 30),
        (json.dumps({"return_window_days": 0}), 0),
        (json.dumps({"return_window_days": "30"}), DEFAULT_RETURN_WINDOW_DAYS),
        (json.dumps({"return_window_days": True}), DEFAULT_RETURN_WINDOW_DAYS),
        ("not json", DEFAULT_RETURN_WINDOW_DAYS),
        ("[1, 2]", DEFAULT_RETURN_WINDOW_DAYS),
    ],
)
def test_return_window_of_a_marker(marker: str | None, days: int) -> None:
    assert SEEDED_KEY == "seeded"
    assert return_window_of(marker) == days
