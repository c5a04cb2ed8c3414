"""A change at a backend that ignores idempotency keys happens at most once per
confirmation, however slow the backend, whatever is cut, and across restarts (issue 36,
item 1: a shop that took 4 s to refund, under a 2 s timeout, refunded twice).

The shop here is a model with its own clock: a request may be made at once, made later
("slow": still in flight when the call gave up), refused before anything was made, or
made and its answer cut; the drive may be interrupted by a restart right after a send.
Hypothesis draws the sequences; the invariant is the customer's: one Confirm, at most one
change, and a run that says "done" only when the change is there. Time is the model's,
advanced by the executor's injected sleep, so nothing here waits on the wall clock.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agent_core.catalog.builtin import CANCEL_ORDER
from agent_core.execution.executor import Executor
from agent_core.execution.tools import Tool, ToolContext, ToolFailure, ToolRegistry
from agent_core.models import Approval, ErrorType, Idempotency, RunStatus, StepStatus
from tests.fakes import CANCEL, RecordingJournal, Script, make_run
from tests.test_reconcile import CANCELLED, PENDING

SETTLE_S = 10.0


class Restart(BaseException):
    """The process dies right after a request went out (not an Exception: nothing in the
    executor may catch it, as nothing runs after a SIGKILL)."""


@dataclass
class Clock:
    now: datetime = field(default_factory=lambda: datetime(2026, 12, 7, tzinfo=UTC))

    def __call__(self) -> datetime:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class Shop:
    """A backend that ignores the key: every request that arrives may make the change."""

    clock: Clock
    # One behaviour per request, in order; "ok" once they run out.
    behaviours: list[tuple[str, float]]
    # When each change made (or still being made) takes effect.
    made_at: list[datetime] = field(default_factory=list)
    sent: int = 0

    async def cancel(self, args: BaseModel, ctx: ToolContext) -> Any:
        kind, takes_s = (
            self.behaviours[self.sent] if self.sent < len(self.behaviours) else ("ok", 0)
        )
        self.sent += 1
        now = self.clock.now
        if kind == "ok":
            self.made_at.append(now)
            return CANCELLED
        if kind == "fails":  # refused before anything was made (a 503 from the shop)
            raise ToolFailure(ErrorType.UNAVAILABLE, "HTTP 503", may_have_happened=True)
        self.made_at.append(now + timedelta(seconds=takes_s if kind == "slow" else 0))
        if kind == "restart":
            raise Restart
        # "slow" (still working when the call gave up) or "cut" (made, answer lost)
        raise ToolFailure(ErrorType.TIMEOUT, "no answer: ReadTimeout", may_have_happened=True)

    async def read(self, args: BaseModel, ctx: ToolContext) -> Any:
        return CANCELLED if any(at <= self.clock.now for at in self.made_at) else None


def registry_for(shop: Shop) -> ToolRegistry:
    return ToolRegistry(
        [
            Tool("get_order_status", "s", CANCEL_ORDER.args_model, Script([PENDING])),
            Tool.of(
                CANCEL_ORDER,
                shop.cancel,
                idempotency=Idempotency.IGNORED,
                reconcile=shop.read,
                settle_s=SETTLE_S,
                max_retries=2,
            ),
        ]
    )


async def confirm_and_drive(shop: Shop, clock: Clock) -> Any:
    """One Confirm; each restart starts a new executor on the same run, as recovery does."""
    run = make_run([CANCEL])
    step = run.steps[0]
    step.approval = Approval(approved=True, by_user_id=run.user_id, at=clock.now)
    for _ in range(10):
        executor = Executor(
            registry_for(shop),
            journal=RecordingJournal(),
            sleep=clock.sleep,
            clock=clock,
            rand=lambda: 0.5,
        )
        try:
            return await executor.drive(run)
        except Restart:
            assert step.status is StepStatus.RUNNING  # what a crash mid-call leaves
            clock.now += timedelta(seconds=1)  # the process comes back
    raise AssertionError("the model restarted more often than it has behaviours")


BEHAVIOUR = st.one_of(
    st.tuples(st.just("ok"), st.just(0.0)),
    st.tuples(st.just("fails"), st.just(0.0)),
    st.tuples(st.just("cut"), st.just(0.0)),
    # A slow shop takes up to its declared settle time to make the change.
    st.tuples(st.just("slow"), st.floats(min_value=0.1, max_value=SETTLE_S)),
    st.tuples(st.just("restart"), st.floats(min_value=0.0, max_value=SETTLE_S)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(BEHAVIOUR, min_size=1, max_size=4))
def test_one_confirmation_makes_at_most_one_change(behaviours: list[tuple[str, float]]) -> None:
    clock = Clock()
    shop = Shop(clock, behaviours)
    run = asyncio.run(confirm_and_drive(shop, clock))

    assert len(shop.made_at) <= 1, (behaviours, shop.made_at)
    if run.status is RunStatus.COMPLETED:
        # Told "done": the change is there (or lands within the shop's own settle time).
        assert len(shop.made_at) == 1
    else:
        # Not done, or unknown for staff: never a second request for a change in flight.
        assert run.stop_reason in {"unknown_outcome", "step_failed"} or run.status in {
            RunStatus.FAILED
        }


async def test_a_slow_change_found_within_its_settle_time_is_not_sent_again() -> None:
    clock = Clock()
    shop = Shop(clock, [("slow", 4.0)])  # the shop: 4 s to refund, 2 s timeout
    run = await confirm_and_drive(shop, clock)

    assert run.status is RunStatus.COMPLETED
    assert shop.sent == 1 and len(shop.made_at) == 1


async def test_a_change_still_absent_after_its_settle_time_is_sent_once_more() -> None:
    clock = Clock()
    shop = Shop(clock, [("fails", 0.0), ("ok", 0.0)])
    start = clock.now
    run = await confirm_and_drive(shop, clock)

    assert run.status is RunStatus.COMPLETED
    assert shop.sent == 2 and len(shop.made_at) == 1
    # The second request went out only once the first had had its whole settle time.
    assert shop.made_at[0] - start >= timedelta(seconds=SETTLE_S)


@pytest.mark.parametrize("takes_s", [0.5, 9.5])
async def test_a_restart_right_after_the_send_waits_for_the_change_before_resending(
    takes_s: float,
) -> None:
    clock = Clock()
    shop = Shop(clock, [("restart", takes_s)])
    run = await confirm_and_drive(shop, clock)

    assert run.status is RunStatus.COMPLETED
    assert shop.sent == 1 and len(shop.made_at) == 1
