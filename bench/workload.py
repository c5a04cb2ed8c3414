"""The standard workload on stepwise: plan → status → policy → cancel (pause) → confirm → done.

Exactly the production path minus the planner's text analysis and the shop's database: the
real `Agent`, `Executor` and `SqliteRunStore` (every transition journaled in a WAL file;
each step committed as `running` before its tool runs, the pause before it is returned,
the end before the answer is returned — see "Commit points" in agent_core/execution/executor.py),
instant in-process tools, and a planner that returns the same three-step plan for every
request.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from agent_core.agent import Agent
from agent_core.execution.executor import Executor
from agent_core.execution.tools import Tool, ToolContext, ToolRegistry
from agent_core.models import ClaimResult, Language, Risk, RunStatus, StepStatus, StepTag
from agent_core.understanding.planner import PlanDraft, PlanRequest, StepDraft
from bench.measure import CommitCounter, checkpoint, connections_of, db_bytes, query
from stepwise.heap import settle_heap
from storage.runs.sqlite import SqliteRunStore

CUSTOMERS = 10_000  # user/chat ids cycle over this many customers


class OrderArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    order_id: str


class PolicyArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str
    lang: str = "en"


@dataclass
class ToolCalls:
    """How often each instant tool ran: every run must cancel exactly once."""

    status: int = 0
    policy: int = 0
    cancel: int = 0
    cancelled_keys: set[str] = field(default_factory=set)


def order_id_of(number: int) -> str:
    return f"B{number:07d}"


def customer_of(number: int) -> int:
    return 100_000 + number % CUSTOMERS


async def tool_order_status(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id, "status": "pending", "eta": "2026-12-10", "items": ["keyboard"]}


async def tool_search_policy(query: str) -> list[dict[str, str]]:
    return [
        {
            "title": "Cancellation",
            "text": "Orders can be cancelled free of charge until they are shipped.",
        }
    ]


async def tool_cancel_order(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id, "status": "cancelled"}


def instant_tools(calls: ToolCalls) -> list[Tool]:
    async def get_order_status(args: OrderArgs, ctx: ToolContext) -> dict[str, Any]:
        calls.status += 1
        return await tool_order_status(args.order_id)

    async def search_policy(args: PolicyArgs, ctx: ToolContext) -> list[dict[str, str]]:
        calls.policy += 1
        return await tool_search_policy(args.query)

    async def cancel_order(args: OrderArgs, ctx: ToolContext) -> dict[str, Any]:
        calls.cancel += 1
        calls.cancelled_keys.add(ctx.idempotency_key)
        return await tool_cancel_order(args.order_id)

    return [
        Tool("get_order_status", "Order status.", OrderArgs, get_order_status),
        Tool("search_policy", "Policy search.", PolicyArgs, search_policy),
        Tool(
            "cancel_order",
            "Cancel an order.",
            OrderArgs,
            cancel_order,
            risk=Risk.HIGH,
            idempotent=False,
        ),
    ]


class FixedPlanner:
    """The standard plan for every request; the order id is the request's last word."""

    async def plan(self, request: PlanRequest) -> PlanDraft:
        order_id = request.text.rsplit(" ", 1)[-1]
        return PlanDraft(
            language=Language.EN,
            steps=[
                StepDraft(
                    goal=f"Check the status of order {order_id}",
                    tool="get_order_status",
                    args={"order_id": order_id},
                    tag=StepTag.ORDER_STATUS,
                ),
                StepDraft(
                    goal="Look up the cancellation policy",
                    tool="search_policy",
                    args={"query": "cancellation", "lang": "en"},
                    tag=StepTag.POLICY,
                ),
                StepDraft(
                    goal=f"Cancel order {order_id}",
                    tool="cancel_order",
                    args={"order_id": order_id},
                    tag=StepTag.CANCEL,
                ),
            ],
        )


class StepwiseSubject:
    """One database file and one agent; `run_one(n)` plays the standard run number n."""

    name = "stepwise"

    def __init__(self, path: Path, store: SqliteRunStore, agent: Agent, calls: ToolCalls) -> None:
        self.path = path
        self.store = store
        self.agent = agent
        self.calls = calls
        self.runs = 0
        self.counter = CommitCounter()

    @classmethod
    async def open(cls, path: Path, synchronous: str) -> StepwiseSubject:
        store = await SqliteRunStore.open(path, synchronous=synchronous)
        calls = ToolCalls()
        registry = ToolRegistry(instant_tools(calls))
        ids = itertools.count(1)
        agent = Agent(
            FixedPlanner(),
            Executor(registry, journal=store),
            store,
            new_id=lambda: f"r{next(ids):09d}",
        )
        settle_heap()  # as `stepwise serve` does once it is up
        return cls(path, store, agent, calls)

    async def run_one(self, number: int) -> None:
        customer = customer_of(number)
        run = await self.agent.ask(
            f"cancel order {order_id_of(number)}", user_id=customer, chat_id=customer
        )
        if run.status is not RunStatus.PAUSED or run.pause is None:
            raise AssertionError(f"run {run.id} did not pause: {run.status}")
        outcome = await self.agent.decide(
            run.id, user_id=customer, approved=True, nonce=run.pause.nonce
        )
        final = outcome.run
        if outcome.result is not ClaimResult.OK or final is None:
            raise AssertionError(f"run {run.id}: confirmation refused ({outcome.result})")
        if final.status is not RunStatus.COMPLETED or final.steps[2].status is not StepStatus.DONE:
            raise AssertionError(f"run {run.id} ended {final.status}")
        self.runs += 1

    async def pause_one(self, number: int) -> None:
        """Only the first half: plan, two steps, pause before `cancel_order`."""
        customer = customer_of(number)
        run = await self.agent.ask(
            f"cancel order {order_id_of(number)}", user_id=customer, chat_id=customer
        )
        if run.status is not RunStatus.PAUSED:
            raise AssertionError(f"run {run.id} did not pause: {run.status}")

    async def count_commits(self, on: bool) -> None:
        if on:
            await self.counter.attach(*connections_of(self.store))
        else:
            await self.counter.detach()

    async def transitions(self) -> int:
        """Journal entries written: one event row per transition (claims included)."""
        return int(query(self.path, "SELECT count(*) FROM events")[0][0])

    async def verify(self) -> None:
        rows = query(self.path, "SELECT status, count(*) FROM runs GROUP BY status")
        by_status = {str(r[0]): int(r[1]) for r in rows}
        if by_status != {"completed": self.runs}:
            raise AssertionError(f"expected {self.runs} completed runs, found {by_status}")
        if self.calls.cancel != self.runs or len(self.calls.cancelled_keys) != self.runs:
            raise AssertionError(f"{self.calls.cancel} cancellations for {self.runs} runs")

    async def size(self) -> int:
        for conn in connections_of(self.store):
            await checkpoint(conn)
        return db_bytes(self.path)

    async def close(self) -> None:
        await self.store.close()
