"""The standard workload in LangGraph, for comparison at equal durability.

A StateGraph of the same three nodes calling the same instant tools; `cancel_order` asks
for confirmation with `interrupt()` and is resumed with `Command(resume=True)`. Checkpoints
go to an `AsyncSqliteSaver` on a WAL file whose connection we open ourselves, so that
`PRAGMA synchronous` is the same as stepwise's (the saver itself never sets it, which
leaves SQLite's default FULL). Each run is one thread. `durability="sync"` makes LangGraph
persist each step before starting the next, as stepwise commits each transition before
moving on (LangGraph's default, "async", overlaps the write with the next step).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

import aiosqlite
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Durability, interrupt

from bench.measure import CommitCounter, checkpoint, db_bytes
from bench.workload import (
    order_id_of,
    tool_cancel_order,
    tool_order_status,
    tool_search_policy,
)


class OrderState(TypedDict, total=False):
    order_id: str
    status: str
    policy: list[dict[str, str]]
    cancelled: bool


async def get_order_status(state: OrderState) -> dict[str, Any]:
    order = await tool_order_status(state["order_id"])
    return {"status": order["status"]}


async def search_policy(state: OrderState) -> dict[str, Any]:
    return {"policy": await tool_search_policy("cancellation")}


async def cancel_order(state: OrderState) -> dict[str, Any]:
    approved = interrupt({"tool": "cancel_order", "order_id": state["order_id"]})
    if not approved:
        return {"cancelled": False}
    result = await tool_cancel_order(state["order_id"])
    return {"cancelled": True, "status": result["status"]}


def build_graph(saver: AsyncSqliteSaver) -> Any:
    builder = StateGraph(OrderState)
    builder.add_node("get_order_status", get_order_status)
    builder.add_node("search_policy", search_policy)
    builder.add_node("cancel_order", cancel_order)
    builder.add_edge(START, "get_order_status")
    builder.add_edge("get_order_status", "search_policy")
    builder.add_edge("search_policy", "cancel_order")
    builder.add_edge("cancel_order", END)
    return builder.compile(checkpointer=saver)


async def open_connection(path: Path, synchronous: str) -> aiosqlite.Connection:
    """The saver's connection with the same pragmas as stepwise's (WAL, synchronous)."""
    conn = await aiosqlite.connect(str(path))
    await conn.execute("PRAGMA journal_mode = WAL")
    await conn.execute(f"PRAGMA synchronous = {synchronous}")
    async with conn.execute("PRAGMA synchronous") as cur:
        row = await cur.fetchone()
    expected = {"FULL": 2, "NORMAL": 1}[synchronous]
    if row is None or int(row[0]) != expected:
        raise RuntimeError(f"synchronous is {row}, wanted {synchronous}")
    return conn


class LangGraphSubject:
    name = "langgraph"

    def __init__(
        self, path: Path, conn: aiosqlite.Connection, graph: Any, durability: Durability
    ) -> None:
        self.path = path
        self.conn = conn
        self.graph = graph
        self.durability: Durability = durability
        self.runs = 0
        self.counter = CommitCounter()

    @classmethod
    async def open(
        cls, path: Path, synchronous: str, durability: Durability = "sync"
    ) -> LangGraphSubject:
        conn = await open_connection(path, synchronous)
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        return cls(path, conn, build_graph(saver), durability)

    async def run_one(self, number: int) -> None:
        config: Any = {"configurable": {"thread_id": f"run-{number}"}}
        order_id = order_id_of(number)
        paused = await self.graph.ainvoke(
            {"order_id": order_id}, config, durability=self.durability
        )
        if "__interrupt__" not in paused:
            raise AssertionError(f"thread run-{number} did not pause: {paused}")
        final = await self.graph.ainvoke(Command(resume=True), config, durability=self.durability)
        if final.get("cancelled") is not True or final.get("status") != "cancelled":
            raise AssertionError(f"thread run-{number} ended {final}")
        self.runs += 1

    async def count_commits(self, on: bool) -> None:
        if on:
            await self.counter.attach(self.conn)
        else:
            await self.counter.detach()

    async def verify(self) -> None:
        async with self.conn.execute("SELECT count(DISTINCT thread_id) FROM checkpoints") as cur:
            row = await cur.fetchone()
        threads = int(row[0]) if row else 0
        if threads != self.runs:
            raise AssertionError(f"{threads} checkpointed threads for {self.runs} runs")

    async def size(self) -> int:
        await checkpoint(self.conn)
        return db_bytes(self.path)

    async def close(self) -> None:
        await self.conn.close()
