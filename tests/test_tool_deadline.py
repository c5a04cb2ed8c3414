"""A tool call's deadline (`ToolRegistry.call`): armed only once the handler suspends,
counted from when it started, and out of the way of cancellation and results."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from agent_core.execution.tools import Tool, ToolContext, ToolRegistry
from agent_core.models import ErrorType, ToolError, ToolOk

CTX = ToolContext(user_id=1, trace_id="t", run_id="r", step_id="s1")


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    order_id: str


async def test_an_instant_handler_schedules_no_timer() -> None:
    loop = asyncio.get_running_loop()
    seen: list[int] = []

    async def instant(args: Args, ctx: ToolContext) -> dict[str, Any]:
        seen.append(len(loop._scheduled))  # type: ignore[attr-defined]
        return {"order_id": args.order_id}

    registry = ToolRegistry([Tool("instant", "i", Args, instant, timeout_s=5)])
    before = len(loop._scheduled)  # type: ignore[attr-defined]
    result = await registry.call("instant", {"order_id": "A1"}, CTX)
    assert isinstance(result, ToolOk) and result.data == {"order_id": "A1"}
    assert seen == [before]
    assert len(loop._scheduled) == before  # type: ignore[attr-defined]


async def test_a_handler_that_suspends_gets_its_answer_through() -> None:
    async def twice(args: Args, ctx: ToolContext) -> dict[str, Any]:
        await asyncio.sleep(0)
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(future.set_result, args.order_id)
        return {"order_id": await future}

    registry = ToolRegistry([Tool("twice", "t", Args, twice, timeout_s=5)])
    result = await registry.call("twice", {"order_id": "A2"}, CTX)
    assert isinstance(result, ToolOk) and result.data == {"order_id": "A2"}


async def test_a_handler_that_suspends_is_cut_off_at_start_plus_timeout_s() -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    armed: list[tuple[float, float]] = []  # (the timer's instant, when it was seen)
    never = asyncio.Event()

    async def hang(args: Args, ctx: ToolContext) -> None:
        await asyncio.sleep(0)
        timers = [h.when() for h in loop._scheduled if not h.cancelled()]  # type: ignore[attr-defined]
        armed.append((max(timers), loop.time()))
        await never.wait()

    registry = ToolRegistry([Tool("hang", "h", Args, hang, timeout_s=0.05)])
    result = await registry.call("hang", {"order_id": "A3"}, CTX)
    assert isinstance(result, ToolError) and result.error_type is ErrorType.TIMEOUT
    assert result.may_have_happened
    ((when, seen),) = armed
    assert started + 0.05 <= when <= seen + 0.05


async def test_a_cancelled_call_cancels_the_handler_and_is_not_a_timeout() -> None:
    inside = asyncio.Event()
    cancelled = asyncio.Event()

    async def waits(args: Args, ctx: ToolContext) -> None:
        inside.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    registry = ToolRegistry([Tool("waits", "w", Args, waits, timeout_s=60)])
    call = asyncio.create_task(registry.call("waits", {"order_id": "A4"}, CTX))
    await inside.wait()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert call.cancelled() and cancelled.is_set()


async def test_a_failure_before_the_first_suspension_is_handled_as_before() -> None:
    async def boom(args: Args, ctx: ToolContext) -> None:
        raise KeyError("internals")

    registry = ToolRegistry([Tool("boom", "b", Args, boom, timeout_s=5)])
    result = await registry.call("boom", {"order_id": "A5"}, CTX)
    assert isinstance(result, ToolError) and result.error_type is ErrorType.INTERNAL
