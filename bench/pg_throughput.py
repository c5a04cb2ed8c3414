"""Section `pg`: the standard workload on PostgreSQL — stepwise vs DBOS Transact vs LangGraph.

The same run as in `throughput` (plan → status → policy → pause before `cancel_order` →
confirm → cancel → done, instant in-process tools), every system durable on the same
PostgreSQL server, each in a fresh schema of its own (dropped afterwards):

* **stepwise**: the real `Agent` and `Executor` on `PgRunStore` (`STEPWISE_DB=postgresql://…`).
* **dbos**: DBOS Transact (pip `dbos`), the run as one async workflow of three steps whose
  third waits for the confirmation with `DBOS.recv_async`; the caller learns the pause from
  an event (`DBOS.set_event_async` / `get_event_async`, as a bot would before showing the
  buttons) and confirms with `DBOS.send_async` — DBOS's own idiom for a human in the loop.
* **langgraph**: the same `StateGraph` as in `throughput`, checkpointed by LangGraph's
  `AsyncPostgresSaver` on a psycopg pool, `durability="sync"`.

Each system runs after the other (see `run_pg`), after a warm-up. Each system
verifies at the end that every run cancelled its order exactly once.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import secrets
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import psycopg

from bench.measure import LatencySummary, drive
from bench.report import Report
from bench.workload import (
    FixedPlanner,
    ToolCalls,
    customer_of,
    instant_tools,
    order_id_of,
    tool_cancel_order,
    tool_order_status,
    tool_search_policy,
)

SECTION = "pg"
DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"
STEPWISE, DBOS_NAME, LANGGRAPH = "stepwise", "dbos", "langgraph"


def server_url() -> str:
    return os.environ.get("STEPWISE_BENCH_PG", DEFAULT_URL)


def in_schema(url: str, schema: str) -> str:
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}options={quote(f'-csearch_path={schema}')}"


def fresh_schema(url: str, prefix: str) -> str:
    schema = f"bench_{prefix}_{secrets.token_hex(4)}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    return schema


def drop_schema(url: str, schema: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


class StepwisePg:
    name = STEPWISE

    def __init__(self, url: str) -> None:
        self.server = url
        self.schema = fresh_schema(url, "stepwise")
        self.calls = ToolCalls()
        self.runs = 0
        self.agent: Any = None
        self.store: Any = None

    async def open(self, concurrency: int) -> None:
        from agent_core.agent import Agent
        from agent_core.execution.executor import Executor
        from agent_core.execution.tools import ToolRegistry
        from storage.runs.postgres import PgRunStore

        self.store = await PgRunStore.open(
            in_schema(self.server, self.schema), pool_size=max(4, min(concurrency, 20))
        )
        ids = itertools.count(1)
        self.agent = Agent(
            FixedPlanner(),
            Executor(ToolRegistry(instant_tools(self.calls)), journal=self.store),
            self.store,
            new_id=lambda: f"r{next(ids):09d}",
        )

    async def run_one(self, number: int) -> None:
        from agent_core.models import ClaimResult, RunStatus

        customer = customer_of(number)
        run = await self.agent.ask(
            f"cancel order {order_id_of(number)}", user_id=customer, chat_id=customer
        )
        if run.status is not RunStatus.PAUSED or run.pause is None:
            raise AssertionError(f"run {run.id} did not pause: {run.status}")
        outcome = await self.agent.decide(
            run.id, user_id=customer, approved=True, nonce=run.pause.nonce
        )
        if outcome.result is not ClaimResult.OK or outcome.run is None:
            raise AssertionError(f"run {run.id}: confirmation refused ({outcome.result})")
        if outcome.run.status is not RunStatus.COMPLETED:
            raise AssertionError(f"run {run.id} ended {outcome.run.status}")
        self.runs += 1

    async def verify(self) -> None:
        with psycopg.connect(in_schema(self.server, self.schema)) as conn:
            row = conn.execute("SELECT count(*) FROM runs WHERE status = 'completed'").fetchone()
        if row is None or row[0] != self.runs or self.calls.cancel != self.runs:
            raise AssertionError(f"stepwise: {row} completed, {self.calls.cancel} cancels")

    async def close(self) -> None:
        await self.store.close()
        drop_schema(self.server, self.schema)


class DbosPg:
    """DBOS Transact is a process-wide singleton: one instance per measured configuration."""

    name = DBOS_NAME

    def __init__(self, url: str) -> None:
        self.server = url
        self.schema = fresh_schema(url, "dbos")
        self.runs = 0
        self.cancels = 0
        self.workflow: Any = None

    async def open(self, concurrency: int) -> None:
        from dbos import DBOS, DBOSConfig

        logging.getLogger("dbos").setLevel(logging.WARNING)
        DBOS.destroy(destroy_registry=True)
        subject = self

        @DBOS.step()
        async def get_order_status(order_id: str) -> dict[str, Any]:
            return await tool_order_status(order_id)

        @DBOS.step()
        async def search_policy() -> list[dict[str, str]]:
            return await tool_search_policy("cancellation")

        @DBOS.step()
        async def cancel_order(order_id: str) -> dict[str, Any]:
            subject.cancels += 1
            return await tool_cancel_order(order_id)

        @DBOS.workflow()
        async def standard_run(order_id: str) -> str:
            await get_order_status(order_id)
            await search_policy()
            await DBOS.set_event_async("paused", True)
            approved = await DBOS.recv_async("confirm", timeout_seconds=60)
            if not approved:
                return "declined"
            result = await cancel_order(order_id)
            return str(result["status"])

        self.workflow = standard_run
        config: DBOSConfig = {
            "name": "stepwise-bench",
            "system_database_url": self.server,
            "dbos_system_schema": self.schema,
            "sys_db_pool_size": max(4, min(concurrency, 20)),
            "log_level": "WARNING",
            "console_log_level": "WARNING",
        }
        DBOS(config=config)
        DBOS.launch()

    async def run_one(self, number: int) -> None:
        from dbos import DBOS

        handle = await DBOS.start_workflow_async(self.workflow, order_id_of(number))
        workflow_id = handle.get_workflow_id()
        paused = await DBOS.get_event_async(workflow_id, "paused", timeout_seconds=60)
        if paused is not True:
            raise AssertionError(f"workflow {workflow_id} did not pause")
        await DBOS.send_async(workflow_id, True, "confirm")
        if await handle.get_result() != "cancelled":
            raise AssertionError(f"workflow {workflow_id} did not cancel")
        self.runs += 1

    async def verify(self) -> None:
        if self.cancels != self.runs:
            raise AssertionError(f"dbos: {self.cancels} cancels for {self.runs} runs")

    async def close(self) -> None:
        from dbos import DBOS

        DBOS.destroy(destroy_registry=True)
        # DBOS installs its own default executor on the loop and shuts it down on destroy;
        # the systems measured after it (LangGraph's saver uses to_thread) need one again.
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor())
        drop_schema(self.server, self.schema)


class LangGraphPg:
    name = LANGGRAPH

    def __init__(self, url: str) -> None:
        self.server = url
        self.schema = fresh_schema(url, "langgraph")
        self.runs = 0
        self.pool: Any = None
        self.graph: Any = None

    async def open(self, concurrency: int) -> None:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool

        from bench.langgraph_flow import build_graph

        self.pool = AsyncConnectionPool(
            in_schema(self.server, self.schema),
            min_size=1,
            max_size=max(4, min(concurrency, 20)),
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
            open=False,
        )
        await self.pool.open()
        saver = AsyncPostgresSaver(self.pool)
        await saver.setup()
        self.graph = build_graph(saver)

    async def run_one(self, number: int) -> None:
        from langgraph.types import Command

        config: Any = {"configurable": {"thread_id": f"run-{number}"}}
        paused = await self.graph.ainvoke(
            {"order_id": order_id_of(number)}, config, durability="sync"
        )
        if "__interrupt__" not in paused:
            raise AssertionError(f"thread run-{number} did not pause")
        final = await self.graph.ainvoke(Command(resume=True), config, durability="sync")
        if final.get("status") != "cancelled":
            raise AssertionError(f"thread run-{number} ended {final}")
        self.runs += 1

    async def verify(self) -> None:
        async with self.pool.connection() as conn:
            cur = await conn.execute("SELECT count(DISTINCT thread_id) AS n FROM checkpoints")
            row = await cur.fetchone()
        if row is None or int(row["n"]) != self.runs:
            raise AssertionError(f"langgraph: {row} threads for {self.runs} runs")

    async def close(self) -> None:
        await self.pool.close()
        drop_schema(self.server, self.schema)


SUBJECTS = {STEPWISE: StepwisePg, DBOS_NAME: DbosPg, LANGGRAPH: LangGraphPg}


@dataclass(frozen=True)
class PgPlan:
    runs: int
    concurrency: int
    chunks: int
    systems: Sequence[str] = (STEPWISE, DBOS_NAME, LANGGRAPH)


async def run_pg(report: Report, plan: PgPlan) -> None:
    """Per mode, each system runs all its chunks while open, one system after the other.

    Unlike `throughput`, systems cannot alternate chunk by chunk: DBOS Transact is a
    process-wide singleton whose launch (migrations, background threads) would then be
    paid inside every chunk. To spread drift, the systems' order is reversed between modes.
    """
    url = server_url()
    try:
        psycopg.connect(url, connect_timeout=3).close()
    except psycopg.Error as exc:
        report.note(f"pg: no PostgreSQL at {url} ({exc.__class__.__name__}); section skipped")
        return
    order = list(plan.systems)
    for concurrency in (1, plan.concurrency):
        mode = "sequential" if concurrency <= 1 else f"{concurrency}-concurrent"
        for name in order:
            await _measure(report, SUBJECTS[name](url), plan, concurrency, mode)
        order.reverse()
        ours = report.value(SECTION, "runs/s", system=STEPWISE, mode=mode)
        for other, goal in ((DBOS_NAME, 3.0), (LANGGRAPH, 4.0)):
            theirs = report.value(SECTION, "runs/s", system=other, mode=mode)
            if ours and theirs:
                ratio = ours / theirs
                report.add("ratios", f"stepwise/{other} on PostgreSQL", ratio, "x", {"mode": mode})
                if concurrency > 1:
                    report.goal(
                        f"stepwise vs {other} on PostgreSQL, {mode}",
                        f">= {goal:.1f}x",
                        f"{ratio:.2f}x ({ours:.0f} vs {theirs:.0f} runs/s)",
                        ratio >= goal,
                    )


async def _measure(report: Report, subject: Any, plan: PgPlan, concurrency: int, mode: str) -> None:
    await subject.open(concurrency)
    try:
        warmup = max(10, min(100, plan.runs // 10))
        await drive(subject.run_one, 0, warmup, concurrency)
        latencies: list[float] = []
        wall = 0.0
        number = warmup
        base, rest = divmod(plan.runs, plan.chunks)
        for chunk in range(plan.chunks):
            count = base + (1 if chunk < rest else 0)
            timed = await drive(subject.run_one, number, count, concurrency)
            number += count
            wall += timed.wall_s
            latencies.extend(timed.latencies_s)
        await subject.verify()
    finally:
        await subject.close()
    labels = {"system": subject.name, "mode": mode}
    lat = LatencySummary.of(latencies)
    report.add(SECTION, "runs/s", len(latencies) / wall if wall else 0.0, "", labels)
    report.add(SECTION, "p50", lat.p50_ms, "ms", labels)
    report.add(SECTION, "p95", lat.p95_ms, "ms", labels)
