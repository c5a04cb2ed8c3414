"""The staff console shows what the planner understood and finds the runs it could not
fully serve (issue 13)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from agent_core.agent import Agent
from agent_core.execution.executor import Executor
from agent_core.execution.tools import ToolRegistry
from agent_core.understanding.planner import RuleBasedPlanner
from storage.runs.sqlite import SqliteRunStore
from storage.shop.sqlite import SqliteShop
from storage.shop.tools import shop_tools
from tests.test_console import client_for, run_ids, sign_in

DEMO = 10001


@pytest.fixture
async def runs(tmp_path: Path) -> AsyncIterator[tuple[SqliteRunStore, dict[str, str]]]:
    db = tmp_path / "console.db"
    store = await SqliteRunStore.open(db)
    shop = await SqliteShop.open(db)
    agent = Agent(
        RuleBasedPlanner(), Executor(ToolRegistry(shop_tools(shop)), journal=store), store
    )
    ids = {}
    for label, text in (
        ("plain", "where is A1001"),
        (
            "bitcoin",
            "Can I pay for order A1005 with bitcoin and change the delivery address to Berlin?",
        ),
        ("negated", "please don't cancel A1001, I only want to know where it is"),
        ("clarify", "I ordered A1001 and A1005, cancel it"),
    ):
        ids[label] = (await agent.ask(text, user_id=DEMO, chat_id=DEMO)).id
    yield store, ids
    await shop.close()
    await store.close()


@pytest.fixture
async def staff(runs: tuple[SqliteRunStore, dict[str, str]]) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(runs[0]) as client:
        assert (await sign_in(client)).status_code == 303
        yield client


async def test_the_unsupported_filter_finds_only_flagged_runs(
    staff: httpx.AsyncClient, runs: tuple[SqliteRunStore, dict[str, str]]
) -> None:
    _, ids = runs
    flagged = await staff.get("/runs", params={"unsupported": "1"})
    assert run_ids(flagged.text) == [ids["bitcoin"]]
    assert "badge--unsupported" in flagged.text  # never shown as a clean success
    everything = await staff.get("/runs")
    assert set(run_ids(everything.text)) == set(ids.values())
    assert "needs_clarification" in everything.text


async def test_the_run_page_shows_the_interpretation(
    staff: httpx.AsyncClient, runs: tuple[SqliteRunStore, dict[str, str]]
) -> None:
    _, ids = runs
    page = (await staff.get(f"/runs/{ids['negated']}")).text
    assert "Understood" in page and "Not asked (negated)" in page and "cancel_order" in page
    unsupported = (await staff.get(f"/runs/{ids['bitcoin']}")).text
    assert "No tool serves" in unsupported and "changing how an order is paid" in unsupported
    clarify = (await staff.get(f"/runs/{ids['clarify']}")).text
    assert "Asked back" in clarify and "Which order should I cancel?" in clarify
