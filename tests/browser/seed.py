"""Runs for the console tests, made by the real agent and executor (not hand-written rows).

A flaky order service (the first lookup of A1001 times out) gives a retried step; the
demo shop's delivered order A1002 gives a skipped step with its reason; a confirmed
cancellation gives a decision; a request text with HTML checks escaping.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agent_core.agent import Agent
from agent_core.execution.executor import Executor
from agent_core.execution.policy import Backoff, FailurePolicy
from agent_core.execution.tools import Tool, ToolContext, ToolFailure, ToolRegistry
from agent_core.models import ErrorType
from agent_core.understanding.planner import RuleBasedPlanner
from storage.shop.tools import shop_tools
from storage.store import DemoShop, RunStore, open_shop, open_store
from storage.tables import ts

DEMO = 10001
OTHER = 20002
HTML_REQUEST = "<script>alert('x')</script><b>where</b> is order A1005?"
RETRIED_REQUEST = "where is my order A1001?"
SKIPPED_REQUEST = "帮我查一下订单 A1002 的物流，如果还没送达，再看一下售后政策"
CANCEL_REQUEST = "cancel order A1003"


@dataclass
class Seeded:
    store: RunStore
    shop: DemoShop
    ids: dict[str, str]  # request label -> run id

    async def close(self) -> None:
        await self.shop.close()
        await self.store.close()


def _flaky(tool: Tool) -> Tool:
    """The first lookup of A1001 times out; every other call is the real tool."""
    failed: list[str] = []

    async def handler(args: Any, ctx: ToolContext) -> Any:
        if args.order_id == "A1001" and not failed:
            failed.append(ctx.idempotency_key)
            raise ToolFailure(ErrorType.TIMEOUT, "order service timed out")
        return await tool.handler(args, ctx)

    return dataclasses.replace(tool, handler=handler)


async def seed(db: str | Path) -> Seeded:
    """The runs, on the database `db` names (a SQLite file or a PostgreSQL URL)."""
    store = await open_store(db)
    shop = await open_shop(db)
    tools = [_flaky(t) if t.name == "get_order_status" else t for t in shop_tools(shop)]
    executor = Executor(
        ToolRegistry(tools),
        journal=store,
        policy=FailurePolicy(backoff=Backoff(base_s=0.01, cap_s=0.02)),
    )
    agent = Agent(RuleBasedPlanner(), executor, store)
    ids: dict[str, str] = {}

    async def ask(label: str, text: str, user: int = DEMO) -> None:
        run = await agent.ask(text, user_id=user, chat_id=user)
        ids[label] = run.id

    await ask("retried", RETRIED_REQUEST)
    await ask("skipped", SKIPPED_REQUEST)
    await ask("html", HTML_REQUEST)
    await ask("not_found", "where is order Z9999")
    await ask("foreign", "where is order B2001")
    await ask("fallback", "保修政策是什么")
    await ask("other_user", "where is order B2001", OTHER)
    await ask("cancel", CANCEL_REQUEST)
    await agent.decide(ids["cancel"], user_id=DEMO, approved=True)
    return Seeded(store, shop, ids)


def bulk_runs(db: Path, count: int, *, start: datetime | None = None) -> None:
    """`count` plain completed runs, 30 s apart, written directly (fast, for paging)."""
    start = start or datetime(2025, 1, 1, tzinfo=UTC)
    runs, steps, events = [], [], []
    for i in range(count):
        run_id = f"bulk{i:07d}"
        at = ts(start + timedelta(seconds=30 * i))
        user = 30000 + i % 50
        runs.append((run_id, f"t{i}", user, user, f"bulk request {i}", "en", "completed", at))
        steps.append((run_id, "s1", "get_order_status" if i % 4 else "search_policy"))
        events.append((run_id, f"t{i}", "step_started", "s1", at))
        if i % 10 == 0:
            events.append((run_id, f"t{i}", "step_retrying", "s1", at))
    with sqlite3.connect(db) as conn:
        conn.executemany(
            "INSERT INTO runs (id, trace_id, user_id, chat_id, request_text, language, status,"
            " max_attempts, created_at, updated_at, finished_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, 10, ?8, ?8, ?8)",
            runs,
        )
        conn.executemany(
            "INSERT INTO steps (run_id, position, id, goal, tool, args, status, max_retries)"
            " VALUES (?, 0, ?, 'goal', ?, '{}', 'done', 2)",
            steps,
        )
        conn.executemany(
            "INSERT INTO events (run_id, trace_id, kind, step_id, tool, error_type, at)"
            " VALUES (?, ?, ?, ?, 'get_order_status',"
            " CASE WHEN ?3 = 'step_retrying' THEN 'timeout' END, ?)",
            events,
        )
