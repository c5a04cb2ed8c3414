"""Scripted tools and recorders for executor tests.

A scripted tool plays back a list of outcomes (data, or a ToolFailure to raise) and counts
its calls, so tests can assert exactly how often each side effect happened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from agent_core.execution.executor import Executor
from agent_core.execution.tools import Tool, ToolContext, ToolFailure, ToolRegistry
from agent_core.models import (
    Approval,
    ErrorType,
    Idempotency,
    Language,
    PlanStep,
    Risk,
    Run,
    RunEvent,
    RunStatus,
    utcnow,
)


class OrderArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    order_id: str


class QueryArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str
    lang: str = "en"


Outcome = Any  # data to return, or a ToolFailure to raise

# Plan steps as (tool, args, tag), the way the planner makes them.
STATUS = ("get_order_status", {"order_id": "A1001"}, "order_status")
COMPENSATION = (
    "search_policy",
    {"query": "delay compensation", "lang": "en"},
    "delay_compensation",
)
POLICY = ("search_policy", {"query": "refund", "lang": "en"}, "policy")
CANCEL = ("cancel_order", {"order_id": "A1001"}, "cancel")


@dataclass
class Script:
    """Outcomes played in order; the last one repeats once the list runs out."""

    outcomes: list[Outcome]
    calls: list[tuple[dict[str, Any], ToolContext]] = field(default_factory=list)

    async def __call__(self, args: BaseModel, ctx: ToolContext) -> Any:
        self.calls.append((args.model_dump(), ctx))
        outcome = self.outcomes[min(len(self.calls) - 1, len(self.outcomes) - 1)]
        if isinstance(outcome, ToolFailure):
            raise outcome
        return outcome


def fail(error_type: ErrorType, message: str = "scripted failure") -> ToolFailure:
    return ToolFailure(error_type, message)


def shop_like_tools(
    *,
    status: Sequence[Outcome] = ({"order_id": "A1001", "status": "shipping", "eta": "2026-12-03"},),
    policy: Sequence[Outcome] = (
        [{"title": "Delay compensation", "text": "3 days late: coupon."}],
    ),
    cancel: Sequence[Outcome] = ({"order_id": "A1001", "status": "cancelled"},),
    max_retries: int = 2,
) -> tuple[ToolRegistry, dict[str, Script]]:
    scripts = {
        "get_order_status": Script(list(status)),
        "search_policy": Script(list(policy)),
        "cancel_order": Script(list(cancel)),
    }
    registry = ToolRegistry(
        [
            Tool(
                "get_order_status",
                "Order status.",
                OrderArgs,
                scripts["get_order_status"],
                max_retries=max_retries,
            ),
            Tool(
                "search_policy",
                "Policy search.",
                QueryArgs,
                scripts["search_policy"],
                max_retries=max_retries,
            ),
            Tool(
                "cancel_order",
                "Cancel an order.",
                OrderArgs,
                scripts["cancel_order"],
                risk=Risk.HIGH,
                idempotent=False,
                max_retries=max_retries,
                # Plays a backend that replays a repeated key (the demo shop's ledger).
                idempotency=Idempotency.HONOURED,
            ),
        ]
    )
    return registry, scripts


class RecordingJournal:
    def __init__(self) -> None:
        self.events: list[RunEvent] = []

    async def record_many(self, run: Run, events: Sequence[RunEvent]) -> None:
        self.events.extend(events)

    def kinds(self) -> list[str]:
        return [e.kind.value for e in self.events]


class RecordingSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def make_executor(
    registry: ToolRegistry, **kwargs: Any
) -> tuple[Executor, RecordingJournal, RecordingSleep]:
    journal, sleep = RecordingJournal(), RecordingSleep()
    executor = Executor(registry, journal=journal, sleep=sleep, rand=lambda: 0.5, **kwargs)
    return executor, journal, sleep


async def resume(executor: Executor, run: Run, *, approved: bool, by_user_id: int) -> Run:
    """Decide a paused run in memory the way the store's claim does, then drive it.

    The claim writes the decision on the paused step and retires the pause's nonce in one
    transaction; storage-backed tests go through `Agent.decide` instead.
    """
    if run.status is not RunStatus.PAUSED or run.pause is None:
        raise ValueError(f"run {run.id} is not waiting for a confirmation")
    step = run.step(run.pause.step_id)
    step.approval = Approval(approved=approved, by_user_id=by_user_id, at=utcnow())
    run.pause.nonce = None
    run.status = RunStatus.RUNNING
    return await executor.drive(run)


def make_run(
    steps: Sequence[tuple[str, dict[str, Any], str | None]],
    *,
    language: Language = Language.EN,
    user_id: int = 10001,
    max_retries: int = 2,
) -> Run:
    """A run with the given (tool, args, tag) steps, as the planner would make it."""
    return Run(
        id="run1",
        trace_id="trace1",
        user_id=user_id,
        chat_id=user_id,
        request_text="test",
        language=language,
        steps=[
            PlanStep(
                id=f"s{i}",
                goal=f"{tool} {args}",
                tool=tool,
                args=args,
                tag=tag,
                max_retries=max_retries,
            )
            for i, (tool, args, tag) in enumerate(steps, start=1)
        ],
    )
