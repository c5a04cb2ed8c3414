"""One owner from claim to answer (issue 20, item 1), on both storage backends.

The defect: the claim took the run's lease, but the bot queues the proceed behind other
work in the chat (a slow read), and only runs being driven were renewed. The lease lapsed,
recovery drove the run, and then the queued proceed drove its stale copy: the confirmed
cancel ran twice. Now a claimed run is held (renewed) until its proceed has driven it, and
the proceed drives the run as the database has it under this process's lease, never the
copy read at the claim.

Each process is a store with its own `Lease` on one database; clocks are injected and the
lease keeper's tick is called by the test (what `LeaseKeeper` does every `length / 3`).
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from agent_core.agent import Agent
from agent_core.execution.executor import Executor
from agent_core.models import ClaimResult, EventKind, Run, RunStatus
from agent_core.models import utcnow as real_now
from agent_core.understanding.planner import RuleBasedPlanner
from storage.leases import Lease
from storage.runs.sqlite import SqliteRunStore
from tests.fakes import RecordingSleep, Script, shop_like_tools
from tests.storage_backends import Backend

LEASE = timedelta(seconds=30)


class Clock:
    def __init__(self) -> None:
        self.now = real_now()

    def __call__(self) -> datetime:
        return self.now

    def pass_(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class Process:
    """One `stepwise` process: its store (own lease), its agent, its scripted shop tools."""

    def __init__(self, store: Any, clock: Clock) -> None:
        self.store = store
        registry, self.scripts = shop_like_tools()
        executor = Executor(registry, journal=store, sleep=RecordingSleep())
        self.agent = Agent(RuleBasedPlanner(), executor, store, clock=clock)

    @property
    def cancels(self) -> Script:
        return self.scripts["cancel_order"]

    async def tick(self) -> None:
        """The lease keeper's tick: renew the runs this process holds."""
        await self.store.renew_leases(self.agent.working.ids(), heartbeat=False)


def _lease(owner: str, clock: Clock) -> Lease:
    return Lease(owner, length=LEASE, clock=clock, pid_alive=lambda pid: True)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def processes(store_backend: Backend, clock: Clock) -> AsyncIterator[list[Process]]:
    a = await store_backend.open_store(lease=_lease("h:100:aa", clock))
    b = await store_backend.open_store(lease=_lease("h:200:bb", clock))
    yield [Process(a, clock), Process(b, clock)]
    await a.close()
    await b.close()


async def _paused_cancel(p: Process) -> Run:
    run = await p.agent.ask("cancel order A1001", user_id=10001, chat_id=10001)
    assert run.status is RunStatus.PAUSED and run.pause is not None
    return run


def _count(backend: Backend, run_id: str, kind: EventKind, tool: str | None = None) -> int:
    observer = backend.observer()
    try:
        sql = "SELECT count(*) FROM events WHERE run_id = ? AND kind = ?"
        params: tuple[str, ...] = (run_id, kind.value)
        if tool is not None:
            sql += " AND tool = ?"
            params += (tool,)
        return int(observer.execute(sql, params).fetchone()[0])
    finally:
        observer.close()


async def test_a_claimed_run_waiting_its_turn_keeps_its_lease_and_runs_once(
    processes: list[Process], clock: Clock, store_backend: Backend
) -> None:
    a, b = processes
    run = await _paused_cancel(a)
    assert run.pause is not None
    claimed = await a.agent.claim(run.id, user_id=10001, approved=True, nonce=run.pause.nonce)
    assert claimed.result is ClaimResult.OK and claimed.run is not None
    assert a.agent.working.ids() == [run.id]  # held from the claim, before any drive

    # The proceed waits behind a slow read for three leases; a's keeper keeps ticking.
    for _ in range(9):
        clock.pass_(10)
        await a.tick()
        assert await b.agent.recover() == []
        assert await a.agent.recover() == []  # its own recovery never drives a held run
    assert a.cancels.calls == [] and b.cancels.calls == []

    done = await a.agent.proceed(claimed.run)
    assert done.status is RunStatus.COMPLETED
    assert len(a.cancels.calls) == 1 and b.cancels.calls == []
    assert a.agent.working.ids() == []  # the proceed ended the claim's hold
    assert _count(store_backend, run.id, EventKind.STEP_STARTED, "cancel_order") == 1
    assert _count(store_backend, run.id, EventKind.RUN_FINISHED) == 1


async def test_a_stale_copy_never_drives_a_run_another_process_took_over(
    processes: list[Process], clock: Clock, store_backend: Backend
) -> None:
    a, b = processes
    run = await _paused_cancel(a)
    assert run.pause is not None
    claimed = await a.agent.claim(run.id, user_id=10001, approved=True, nonce=run.pause.nonce)
    assert claimed.run is not None

    clock.pass_(31)  # a stalled past its lease (no tick): b takes the run over and drives it
    (recovered,) = await b.agent.recover()
    assert recovered.status is RunStatus.COMPLETED and len(b.cancels.calls) == 1

    late = await a.agent.proceed(claimed.run)  # a wakes up with the claim's copy
    assert late.status is RunStatus.COMPLETED  # the run as it stands, not driven again
    assert a.cancels.calls == []
    assert a.agent.working.ids() == []
    assert _count(store_backend, run.id, EventKind.STEP_STARTED, "cancel_order") == 1
    assert _count(store_backend, run.id, EventKind.RUN_FINISHED) == 1


async def test_a_failed_proceed_leaves_its_run_to_this_process_recovery_at_once(
    processes: list[Process], clock: Clock, store_backend: Backend
) -> None:
    a, _ = processes
    run = await _paused_cancel(a)
    assert run.pause is not None
    claimed = await a.agent.claim(run.id, user_id=10001, approved=True, nonce=run.pause.nonce)
    assert claimed.run is not None
    real_still_held = a.store.still_held

    async def broken(run_id: str) -> bool:
        raise RuntimeError("storage error")

    a.store.still_held = broken
    with pytest.raises(RuntimeError):
        await a.agent.proceed(claimed.run)
    a.store.still_held = real_still_held
    assert a.agent.working.ids() == [] and a.agent.working.abandoned() == [run.id]
    (recovered,) = await a.agent.recover()  # no wait for its own lease to lapse
    assert recovered.status is RunStatus.COMPLETED and len(a.cancels.calls) == 1


# -- any interleaving: presses, waits behind slow reads, stalls, recoveries, proceeds -------


class OneOwner(RuleBasedStateMachine):
    """Two processes on one SQLite file and one paused cancel. Presses land on either
    process; a process's proceed may wait behind slow reads (time passes, its keeper ticks),
    a process may stall past its lease (time passes, no tick), and either may recover at any
    moment. Whatever the order: at most one cancel call and one `step_started` for it, and
    once everything has settled, exactly one of each, and one answer."""

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.dir = tempfile.TemporaryDirectory()
        self.clock = Clock()
        path = Path(self.dir.name) / "runs.db"
        self.procs = [
            Process(
                self._run(SqliteRunStore.open(path, lease=_lease(owner, self.clock))), self.clock
            )
            for owner in ("h:100:aa", "h:200:bb")
        ]
        self.run_id = ""
        self.nonce: str | None = None
        self.pending: list[list[Run]] = [[], []]  # claimed copies waiting for their proceed
        self.path = path
        run = self._run(_paused_cancel(self.procs[0]))
        assert run.pause is not None
        self.run_id, self.nonce = run.id, run.pause.nonce

    def _run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    @rule(p=st.integers(0, 1))
    def press(self, p: int) -> None:
        outcome = self._run(
            self.procs[p].agent.claim(self.run_id, user_id=10001, approved=True, nonce=self.nonce)
        )
        if outcome.result is ClaimResult.OK:
            assert outcome.run is not None
            self.pending[p].append(outcome.run)

    @rule()
    def wait_behind_a_slow_read(self) -> None:
        """A third of a lease passes; both processes are healthy (their keepers tick)."""
        self.clock.pass_(LEASE.total_seconds() / 3)
        for proc in self.procs:
            self._run(proc.tick())

    @rule(p=st.integers(0, 1))
    def stall(self, p: int) -> None:
        """Process `p` freezes for longer than a lease; the other one's keeper ticks."""
        self.clock.pass_(LEASE.total_seconds() + 1)
        self._run(self.procs[1 - p].tick())

    @rule(p=st.integers(0, 1))
    def recover(self, p: int) -> None:
        self._run(self.procs[p].agent.recover())

    @precondition(lambda self: any(self.pending))
    @rule(p=st.integers(0, 1))
    def proceed(self, p: int) -> None:
        if self.pending[p]:
            self._run(self.procs[p].agent.proceed(self.pending[p].pop(0)))

    def _events(self, kind: EventKind, tool: str | None = None) -> int:
        import sqlite3

        conn = sqlite3.connect(self.path)
        try:
            sql = "SELECT count(*) FROM events WHERE kind = ?" + (" AND tool = ?" if tool else "")
            return int(
                conn.execute(sql, (kind.value, tool) if tool else (kind.value,)).fetchone()[0]
            )
        finally:
            conn.close()

    @invariant()
    def at_most_once(self) -> None:
        assert sum(len(p.cancels.calls) for p in self.procs) <= 1
        assert self._events(EventKind.STEP_STARTED, "cancel_order") <= 1
        assert self._events(EventKind.RUN_FINISHED) <= 1

    def teardown(self) -> None:
        try:
            self.press(0)  # the customer presses (again); everything settles
            for p, copies in enumerate(self.pending):
                for copy in copies:
                    self._run(self.procs[p].agent.proceed(copy))
            self.clock.pass_(LEASE.total_seconds() + 1)
            for proc in self.procs:
                self._run(proc.agent.recover())
            assert sum(len(p.cancels.calls) for p in self.procs) == 1
            assert self._events(EventKind.STEP_STARTED, "cancel_order") == 1
            assert self._events(EventKind.RUN_FINISHED) == 1
            for proc in self.procs:
                assert proc.agent.working.ids() == []
        finally:
            for proc in self.procs:
                self._run(proc.store.close())
            self.loop.close()
            self.dir.cleanup()


OneOwner.TestCase.settings = settings(max_examples=60, stateful_step_count=12, deadline=None)
test_one_owner_whatever_the_interleaving = OneOwner.TestCase
