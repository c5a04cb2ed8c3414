"""Run leases (storage/leases.py) on both backends: who may drive a run, who owes its delivery.

Each process is a store with its own `Lease` (owner id, clock); "another process" is a
second store on the same database. Clocks are injected, so a lease lapses without waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from agent_core.agent import Agent, Working
from agent_core.execution.executor import Executor
from agent_core.models import ClaimResult, EventKind, PromptRef, RunEvent, RunStatus, StepStatus
from agent_core.models import utcnow as real_now
from storage.leases import Lease, LeaseRow, live_others, other_process_line, takeable
from storage.tables import parse_ts
from tests.fakes import STATUS, RecordingSleep, make_run, shop_like_tools
from tests.storage_backends import Backend


class Clock:
    def __init__(self) -> None:
        self.now = real_now()

    def __call__(self) -> datetime:
        return self.now

    def pass_(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


def lease(owner: str, clock: Clock, *, deliver: bool = False, dead: bool = False) -> Lease:
    return Lease(
        owner,
        length=timedelta(seconds=30),
        clock=clock,
        keep_for_delivery=deliver,
        pid_alive=lambda pid: not dead,
    )


@pytest.fixture
async def stores(store_backend: Backend, clock: Clock) -> AsyncIterator[list[Any]]:
    """Two processes on one database: `a` (this host, pid 100) and `b` (this host, pid 200)."""
    a = await store_backend.open_store(lease=lease("h:100:aa", clock))
    b = await store_backend.open_store(lease=lease("h:200:bb", clock))
    yield [a, b]
    await a.close()
    await b.close()


async def interrupted(store: Any, run_id: str = "crashed") -> None:
    """A run `store`'s process started and never finished (its first step in flight)."""
    run = make_run([STATUS])
    run.id = run_id
    run.steps[0].status = StepStatus.RUNNING
    await store.record(run, RunEvent(kind=EventKind.RUN_PLANNED, run_id=run_id, trace_id="t"))


def lease_of(backend: Backend, run_id: str) -> tuple[str | None, str | None]:
    observer = backend.observer()
    try:
        row = observer.execute(
            "SELECT lease_owner, lease_until FROM runs WHERE id = ?", (run_id,)
        ).fetchone()
    finally:
        observer.close()
    return row[0], row[1]


# -- taking a lease ------------------------------------------------------------------------


async def test_a_live_lease_is_not_taken_and_an_expired_one_is(
    stores: list[Any], clock: Clock, store_backend: Backend
) -> None:
    a, b = stores
    await interrupted(a)
    assert lease_of(store_backend, "crashed")[0] == "h:100:aa"
    assert await b.runs_to_recover() == []  # a is alive and its lease runs 30 s
    clock.pass_(29)
    assert await b.runs_to_recover() == []
    clock.pass_(2)  # a stopped renewing 31 s ago
    assert await b.runs_to_recover() == ["crashed"]
    assert lease_of(store_backend, "crashed")[0] == "h:200:bb"
    assert await a.runs_to_recover() == []  # now b's, and live


async def test_the_lease_of_a_dead_process_on_this_host_is_taken_at_once(
    store_backend: Backend, clock: Clock
) -> None:
    """A restarted bot takes its predecessor's runs without waiting out the lease."""
    before = await store_backend.open_store(lease=lease("h:100:aa", clock))
    await interrupted(before)
    elsewhere = await store_backend.open_store(lease=lease("other:100:cc", clock, dead=True))
    restarted = await store_backend.open_store(lease=lease("h:300:dd", clock, dead=True))
    try:
        assert await elsewhere.runs_to_recover() == []  # another host: no pid to check
        assert await restarted.runs_to_recover() == ["crashed"]
    finally:
        for store in (before, elsewhere, restarted):
            await store.close()


async def test_two_recovering_processes_take_each_run_once(
    store_backend: Backend, clock: Clock
) -> None:
    crashed = await store_backend.open_store(lease=lease("gone:1:xx", clock))
    for n in range(5):
        await interrupted(crashed, f"r{n}")
    await crashed.close()  # its leases lapse now
    a = await store_backend.open_store(lease=lease("h:100:aa", clock))
    b = await store_backend.open_store(lease=lease("h:200:bb", clock))
    try:
        taken_a, taken_b = await asyncio.gather(a.runs_to_recover(), b.runs_to_recover())
    finally:
        await a.close()
        await b.close()
    assert sorted(taken_a + taken_b) == [f"r{n}" for n in range(5)]
    assert not set(taken_a) & set(taken_b)


async def test_a_renewed_lease_outlives_its_length_and_only_held_runs_are_renewed(
    stores: list[Any], clock: Clock
) -> None:
    a, b = stores
    await interrupted(a, "driving")
    await interrupted(a, "stuck")  # its drive died: nobody holds it any more
    for _ in range(4):
        clock.pass_(10)
        await a.renew_leases(["driving"])
    assert await b.runs_to_recover() == ["stuck"]


async def test_a_clean_stop_lets_the_leases_lapse_at_once(
    store_backend: Backend, clock: Clock
) -> None:
    a = await store_backend.open_store(lease=lease("far:1:aa", clock))
    await interrupted(a)
    await a.close()
    b = await store_backend.open_store(lease=lease("h:200:bb", clock))
    try:
        assert await b.runs_to_recover() == ["crashed"]
    finally:
        await b.close()


# -- a drive takes the lease, its delivered mark gives it back -------------------------------


async def test_a_drive_holds_its_run_and_a_cli_process_gives_it_back_when_it_pauses(
    stores: list[Any], store_backend: Backend
) -> None:
    a, _ = stores
    registry, _ = shop_like_tools()
    executor = Executor(registry, journal=a, sleep=RecordingSleep())
    agent = Agent(_planner(), executor, a)
    run = await agent.ask("cancel order A1001", user_id=10001, chat_id=10001)
    assert run.status is RunStatus.PAUSED
    assert lease_of(store_backend, run.id) == (None, None)
    assert agent.working.ids() == []


async def test_a_delivering_process_keeps_the_lease_until_the_prompt_and_answer_are_delivered(
    stores: list[Any], clock: Clock, store_backend: Backend
) -> None:
    a, b = stores
    a.lease.keep_for_delivery = True
    registry, _ = shop_like_tools()
    agent = Agent(_planner(), Executor(registry, journal=a, sleep=RecordingSleep()), a)
    run = await agent.ask("cancel order A1001", user_id=10001, chat_id=10001)
    assert run.pause is not None and run.pause.nonce is not None
    assert lease_of(store_backend, run.id)[0] == "h:100:aa"  # the prompt is owed
    await a.bind_prompt(run.id, run.pause.nonce, PromptRef(chat_id=10001, message_id=7))
    assert lease_of(store_backend, run.id) == (None, None)

    claimed = await agent.claim(run.id, user_id=10001, approved=True, nonce=run.pause.nonce)
    assert claimed.result is ClaimResult.OK and claimed.run is not None
    assert lease_of(store_backend, run.id)[0] == "h:100:aa"  # the claim takes it
    done = await agent.proceed(claimed.run)
    assert done.status is RunStatus.COMPLETED
    assert lease_of(store_backend, run.id)[0] == "h:100:aa"  # the answer is owed

    clock.pass_(31)  # a died before sending it: b takes the delivery, once
    taken = await asyncio.gather(
        b.owed_deliveries(since=clock.now - timedelta(hours=24)),
        a.owed_deliveries(since=clock.now - timedelta(hours=24)),
    )
    assert sorted(taken, key=len) == [[], [run.id]]
    await b.add_event(run.id, EventKind.ANSWER_DELIVERED, "delivered")
    assert lease_of(store_backend, run.id) == (None, None)
    clock.pass_(31)
    assert await b.owed_deliveries(since=clock.now - timedelta(hours=24)) == []


async def test_an_answer_owed_for_longer_than_the_window_is_given_up(
    stores: list[Any], clock: Clock, store_backend: Backend
) -> None:
    a, b = stores
    a.lease.keep_for_delivery = True
    registry, _ = shop_like_tools()
    agent = Agent(_planner(), Executor(registry, journal=a, sleep=RecordingSleep()), a)
    run = await agent.ask("where is order A1001", user_id=10001, chat_id=10001)
    assert run.status is RunStatus.COMPLETED
    clock.pass_(31)
    assert await b.owed_deliveries(since=clock.now) == []  # finished before the window
    assert lease_of(store_backend, run.id) == (None, None)


async def test_a_blocked_customer_ends_a_delivery_but_never_a_drive(
    stores: list[Any], store_backend: Backend
) -> None:
    a, _ = stores
    await interrupted(a)
    await a.add_event("crashed", EventKind.CUSTOMER_BLOCKED, "blocked")
    assert lease_of(store_backend, "crashed")[0] == "h:100:aa"


# -- who else is live ----------------------------------------------------------------------


async def test_a_process_sees_the_other_live_processes_by_their_heartbeats(
    stores: list[Any], clock: Clock
) -> None:
    a, b = stores
    assert await b.live_owners() == []
    await a.renew_leases([])
    assert await b.live_owners() == ["h:100:aa"]
    assert await a.live_owners() == []
    clock.pass_(31)
    assert await b.live_owners() == []


def test_the_warning_names_host_and_pid() -> None:
    assert other_process_line(["web1:4242:ab12"]) == (
        "another stepwise process (web1:4242) is live on this database; runs are shared by lease"
    )


def test_takeable_decisions() -> None:
    me = Lease("h:1:me", pid_alive=lambda pid: pid != 9)
    now = "2026-01-01T00:00:30.000000Z"
    live = "2026-01-01T00:01:00.000000Z"
    gone = "2026-01-01T00:00:00.000000Z"
    assert takeable(LeaseRow("r", "running", None, None), me, now)  # written before leases
    assert not takeable(LeaseRow("r", "completed", None, None), me, now)  # nothing owed
    assert takeable(LeaseRow("r", "running", "x:2:a", gone), me, now)
    assert not takeable(LeaseRow("r", "running", "x:2:a", live), me, now)
    assert not takeable(LeaseRow("r", "running", "h:2:a", live), me, now)  # pid 2 alive
    assert takeable(LeaseRow("r", "running", "h:9:a", live), me, now)  # pid 9 gone
    assert takeable(LeaseRow("r", "running", "h:1:old", live), me, now)  # our pid, before us
    assert not takeable(LeaseRow("r", "running", "h:1:me", live), me, now)  # ours, live
    assert takeable(LeaseRow("r", "running", "h:1:me", live), me, now, abandoned=["r"])
    at_now = Lease("h:1:me", clock=lambda: parse_ts(now), pid_alive=lambda pid: pid != 9)
    seen = [("h:1:me", live), ("x:2:a", live), ("y:3:b", gone), ("h:9:z", live)]
    assert live_others(seen, at_now) == ["x:2:a"]  # not us, not lapsed, not dead here


def test_working_counts_nested_holds_and_remembers_failed_drives() -> None:
    working = Working()
    with working.holding("a", "b"):
        with working.holding("a"):
            assert sorted(working.ids()) == ["a", "b"]
        assert sorted(working.ids()) == ["a", "b"]
    assert working.ids() == [] and working.abandoned() == []
    with pytest.raises(RuntimeError), working.holding("c"):
        assert working.abandoned() == []
        raise RuntimeError("storage error mid-run")
    assert working.abandoned() == ["c"]
    with working.holding("c"):  # recovered: held again, no longer abandoned
        assert working.abandoned() == []
    assert working.abandoned() == []


def _planner() -> Any:
    from agent_core.understanding.planner import RuleBasedPlanner

    return RuleBasedPlanner()
