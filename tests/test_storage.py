"""The run store, on SQLite and on PostgreSQL: every transition durable, decisions claimed
exactly once. Tests taking `store` or `store_backend` run on both backends (the conformance
suite, tests/storage_backends.py); the schema-upgrade tests are SQLite's own, and the last
section is what only PostgreSQL has."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sqlite3
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import psycopg
import pytest

import storage.db
import storage.runs.sqlite
from agent_core.agent import Agent
from agent_core.execution.executor import Executor
from agent_core.execution.tools import Tool, ToolContext, ToolRegistry
from agent_core.models import (
    ClaimResult,
    ErrorType,
    EventKind,
    Language,
    Run,
    RunEvent,
    RunStatus,
    StepStatus,
    StepTag,
    utcnow,
)
from agent_core.understanding.planner import PlanDraft, PlanRequest, StepDraft
from stepwise.cli import dispatch
from stepwise.settings import Settings
from storage import tables
from storage.db import MIGRATIONS, StorageUnavailable, fetch
from storage.leases import Lease
from storage.pg_schema import PG_MIGRATIONS
from storage.runs.sqlite import SqliteRunStore
from storage.store import RunStore, migrate_database, open_store
from storage.tables import parse_ts, ts
from tests.fakes import (
    CANCEL,
    COMPENSATION,
    STATUS,
    OrderArgs,
    RecordingSleep,
    fail,
    make_run,
    shop_like_tools,
)
from tests.storage_backends import Backend

FAR_PAST = utcnow() - timedelta(days=365)


@pytest.fixture
async def store(store_backend: Backend) -> AsyncIterator[RunStore]:
    store = await store_backend.open_store()
    yield store
    await store.close()


def executor_for(store: RunStore, **tools: list[object]) -> tuple[Executor, dict]:  # type: ignore[type-arg]
    registry, scripts = shop_like_tools(**tools)  # type: ignore[arg-type]
    return Executor(registry, journal=store, sleep=RecordingSleep(), rand=lambda: 0.5), scripts


async def test_schema_is_versioned_and_reopening_applies_nothing_twice(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    first = await SqliteRunStore.open(path)
    await first.close()
    second = await SqliteRunStore.open(path)
    await second.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_stored_run_round_trips_exactly(store: RunStore) -> None:
    executor, _ = executor_for(
        store,
        status=[fail(ErrorType.TIMEOUT), {"order_id": "A1001", "status": "delivered"}],
    )
    run = await executor.start(make_run([STATUS, COMPENSATION]))
    loaded = await store.load_run(run.id)
    assert loaded == run
    assert Run.model_validate_json(loaded.model_dump_json()) == run


async def test_every_transition_is_in_the_timeline_in_order(store: RunStore) -> None:
    executor, _ = executor_for(
        store,
        status=[fail(ErrorType.TIMEOUT, "slow"), {"order_id": "A1001", "status": "delivered"}],
    )
    run = await executor.start(make_run([STATUS, COMPENSATION]))
    timeline = await store.history.timeline(run.id)
    assert [(e.kind.value, e.step_id, e.attempt) for e in timeline] == [
        ("run_planned", None, None),
        ("step_started", "s1", 1),
        ("step_retrying", "s1", 1),
        ("step_started", "s1", 2),
        ("step_succeeded", "s1", 2),
        ("step_skipped", "s2", None),
        ("run_finished", None, None),
    ]
    retry = timeline[2]
    assert retry.error_type == "timeout" and retry.decision == "retry" and retry.delay_s == 0.5
    assert timeline[1].args == {"order_id": "A1001"}
    assert timeline[4].observation == {"order_id": "A1001", "status": "delivered"}
    assert "delivered" in (timeline[5].message or "")


async def test_running_row_is_committed_before_the_tool_runs(store_backend: Backend) -> None:
    store = await store_backend.open_store()
    seen: list[tuple[str, str]] = []

    _, scripts = shop_like_tools()
    original = scripts["get_order_status"]

    async def peek(args: object, ctx: object) -> object:
        # Another connection sees the committed state at the instant the tool is called.
        other = store_backend.observer()
        try:
            row = other.execute("SELECT status FROM steps WHERE id = 's1'").fetchone()
            last = other.execute("SELECT kind FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        finally:
            other.close()
        assert row is not None and last is not None
        seen.append((row[0], last[0]))
        return await original(args, ctx)  # type: ignore[arg-type]

    executor = Executor(
        ToolRegistry([Tool("get_order_status", "s", OrderArgs, peek)]), journal=store
    )
    await executor.start(make_run([STATUS]))
    await store.close()
    assert seen == [("running", "step_started")]


async def test_double_confirm_has_one_winner_and_one_side_effect(store: RunStore) -> None:
    executor, scripts = executor_for(store)
    run = await executor.start(make_run([STATUS, CANCEL]))
    assert run.pause is not None and run.pause.nonce
    nonce = run.pause.nonce

    first, claimed_run = await store.claim_pause(
        run.id, user_id=10001, approved=True, nonce=nonce, now=utcnow(), expires_before=FAR_PAST
    )
    second, _ = await store.claim_pause(
        run.id, user_id=10001, approved=True, nonce=nonce, now=utcnow(), expires_before=FAR_PAST
    )
    assert (first, second) == (ClaimResult.OK, ClaimResult.ALREADY_HANDLED)

    claimed = await store.load_run(run.id)
    assert claimed_run == claimed  # the claim hands back the run exactly as stored
    assert claimed is not None and claimed.status is RunStatus.RUNNING
    assert claimed.steps[1].approval is not None and claimed.steps[1].approval.approved
    done = await executor.drive(claimed)
    assert done.status is RunStatus.COMPLETED
    assert len(scripts["cancel_order"].calls) == 1


async def test_concurrent_claims_from_two_connections_have_one_winner(
    store_backend: Backend,
) -> None:
    a = await store_backend.open_store()
    b = await store_backend.open_store()
    executor, _ = executor_for(a)
    run = await executor.start(make_run([STATUS, CANCEL]))
    assert run.pause is not None
    results = await asyncio.gather(
        *(
            s.claim_pause(
                run.id,
                user_id=10001,
                approved=approved,
                nonce=run.pause.nonce,
                now=utcnow(),
                expires_before=FAR_PAST,
            )
            for s, approved in ((a, True), (b, False), (a, True), (b, False))
        )
    )
    await a.close()
    await b.close()
    assert sorted(r.value for r, _ in results) == ["already_handled"] * 3 + ["ok"]


async def test_someone_else_cannot_decide_and_the_run_is_untouched(store: RunStore) -> None:
    executor, _ = executor_for(store)
    run = await executor.start(make_run([STATUS, CANCEL]))
    assert run.pause is not None
    result, seen = await store.claim_pause(
        run.id,
        user_id=666,
        approved=True,
        nonce=run.pause.nonce,
        now=utcnow(),
        expires_before=FAR_PAST,
    )
    assert result is ClaimResult.NOT_ALLOWED
    assert seen is None  # nothing of another customer's run comes back
    assert await store.load_run(run.id) == run


async def test_forged_or_stale_nonce_is_refused(store: RunStore) -> None:
    executor, _ = executor_for(store)
    run = await executor.start(make_run([STATUS, CANCEL]))
    result, _ = await store.claim_pause(
        run.id, user_id=10001, approved=True, nonce="forged", now=utcnow(), expires_before=FAR_PAST
    )
    assert result is ClaimResult.STALE
    assert await store.load_run(run.id) == run
    missing, nothing = await store.claim_pause(
        "nope", user_id=10001, approved=True, nonce=None, now=utcnow(), expires_before=FAR_PAST
    )
    assert missing is ClaimResult.NOT_FOUND and nothing is None


async def test_expired_pause_is_marked_expired_and_runs_nothing(store: RunStore) -> None:
    executor, scripts = executor_for(store)
    run = await executor.start(make_run([STATUS, CANCEL]))
    assert run.pause is not None
    result, _ = await store.claim_pause(
        run.id,
        user_id=10001,
        approved=True,
        nonce=run.pause.nonce,
        now=utcnow(),
        expires_before=utcnow() + timedelta(seconds=1),
    )
    assert result is ClaimResult.EXPIRED
    loaded = await store.load_run(run.id)
    assert loaded is not None and loaded.status is RunStatus.EXPIRED
    assert loaded.steps[1].status is StepStatus.PAUSED and loaded.steps[1].approval is None
    assert scripts["cancel_order"].calls == []


async def test_locked_database_waits_boundedly_then_fails_cleanly(
    store_backend: Backend,
) -> None:
    store = await store_backend.open_store(busy_timeout_s=0.2)
    with store_backend.write_locked():
        executor, scripts = executor_for(store)
        with pytest.raises(StorageUnavailable, match=r"busy|locked"):
            await executor.start(make_run([STATUS]))
        assert scripts["get_order_status"].calls == []
    assert await store.load_run("run1") is None  # nothing half-written
    executor, _ = executor_for(store)
    run = await executor.start(make_run([STATUS]))
    assert (await store.load_run(run.id)) == run  # and it works once the lock is gone
    await store.close()


async def test_history_filters_pages_and_counts_failures(store: RunStore) -> None:
    for number in range(5):
        executor, _ = executor_for(
            store, status=[fail(ErrorType.NOT_FOUND)] if number % 2 else [{"status": "shipping"}]
        )
        run = make_run([STATUS], user_id=100 + number % 2)
        run.id = f"run{number}"
        await executor.start(run)

    page = await store.history.list_runs(limit=2)
    assert [r.id for r in page.items] == ["run4", "run3"] and page.next_cursor
    page2 = await store.history.list_runs(limit=2, before=page.next_cursor)
    assert [r.id for r in page2.items] == ["run2", "run1"]
    page3 = await store.history.list_runs(limit=2, before=page2.next_cursor)
    assert [r.id for r in page3.items] == ["run0"] and page3.next_cursor is None

    failed = await store.history.list_runs(status=RunStatus.FAILED)
    assert {r.id for r in failed.items} == {"run1", "run3"}
    mine = await store.history.list_runs(user_id=100)
    assert {r.id for r in mine.items} == {"run0", "run2", "run4"}
    assert (await store.history.list_runs(trace_id="nope")).items == []

    counts = await store.history.failure_counts(since=utcnow() - timedelta(hours=1))
    assert [(c.error_type, c.tool, c.count) for c in counts] == [
        ("not_found", "get_order_status", 2)
    ]
    assert await store.history.status_counts(since=utcnow() - timedelta(hours=1)) == {
        "completed": 3,
        "failed": 2,
    }


async def test_runs_left_running_are_offered_for_recovery(
    store: RunStore, store_backend: Backend
) -> None:
    executor, _ = executor_for(store)
    paused = await executor.start(make_run([STATUS, CANCEL]))
    # Left running by a process whose lease lapsed (its clock: a minute ago).
    crashed = await store_backend.open_store(lease=Lease("elsewhere:1:x", clock=_minute_ago))
    interrupted = make_run([STATUS])
    interrupted.id = "crashed"
    interrupted.steps[0].status = StepStatus.RUNNING
    await crashed.record(
        interrupted,
        RunEvent(kind=EventKind.RUN_PLANNED, run_id="crashed", trace_id="t"),
    )
    await crashed.close()
    assert await store.runs_to_recover() == ["crashed"]
    assert await store.runs_to_recover() == []  # now this store's, and live
    assert paused.status is RunStatus.PAUSED


def _minute_ago() -> datetime:
    return utcnow() - timedelta(minutes=1)


async def test_last_order_ids_are_the_latest_runs_orders_per_chat_and_user(
    store: RunStore,
) -> None:
    executor, _ = executor_for(store)
    run = make_run([("get_order_status", {"order_id": "A1005"}, "order_status")])
    await executor.start(run)
    assert await store.last_order_ids(run.chat_id, run.user_id) == ["A1005"]
    assert await store.last_order_ids(run.chat_id, 999) == []
    assert await store.last_order_ids(424242, run.user_id) == []
    both = make_run(
        [
            ("get_order_status", {"order_id": "A1007"}, "order_status"),
            ("get_order_status", {"order_id": "A1003"}, "order_status"),
        ]
    )
    both.id, both.created_at = "both", run.created_at + timedelta(seconds=1)
    await executor.start(both)
    # Every order of the latest run, in its steps' order; the earlier run's are not.
    assert await store.last_order_ids(run.chat_id, run.user_id) == ["A1007", "A1003"]


async def test_concurrent_runs_share_commits_and_tools_only_see_durable_rows(
    store_backend: Backend,
) -> None:
    store = await store_backend.open_store()
    commits = await store_backend.count_commits(store)  # observe what the database commits
    observer = store_backend.observer()
    seen: list[str] = []

    async def checked(args: OrderArgs, ctx: object) -> dict[str, str]:
        row = observer.execute(
            "SELECT status FROM steps WHERE run_id = ? AND id = 's1'",
            (ctx.run_id,),  # type: ignore[attr-defined]
        ).fetchone()
        seen.append(row[0] if row else "missing")
        return {"order_id": args.order_id, "status": "shipping"}

    executor = Executor(
        ToolRegistry([Tool("get_order_status", "s", OrderArgs, checked)]), journal=store
    )
    runs = []
    for number in range(30):
        run = make_run([STATUS])
        run.id = f"g{number}"
        runs.append(run)
    finished = await asyncio.gather(*(executor.start(run) for run in runs))
    events = observer.execute("SELECT count(*) FROM events").fetchone()[0]
    observer.close()
    await store.close()

    assert all(r.status is RunStatus.COMPLETED for r in finished)
    assert seen == ["running"] * 30  # every tool call came after its running row was durable
    assert events == 30 * 4  # planned, started, succeeded, finished
    assert len(commits) < events / 2  # transitions of concurrent runs shared commits


# -- commit points, the one-hop claim, timestamps, migrations -------------------------------


class ThreeStepPlanner:
    """status → policy → cancel, the standard run of the benchmark."""

    async def plan(self, request: PlanRequest) -> PlanDraft:
        return PlanDraft(
            language=Language.EN,
            steps=[
                StepDraft(
                    goal="status",
                    tool="get_order_status",
                    args={"order_id": "A1001"},
                    tag=StepTag.ORDER_STATUS,
                ),
                StepDraft(
                    goal="policy",
                    tool="search_policy",
                    args={"query": "cancellation", "lang": "en"},
                    tag=StepTag.POLICY,
                ),
                StepDraft(
                    goal="cancel",
                    tool="cancel_order",
                    args={"order_id": "A1001"},
                    tag=StepTag.CANCEL,
                ),
            ],
        )


async def test_standard_cancel_run_takes_six_commits_and_tools_and_listeners_see_commits(
    store_backend: Backend,
) -> None:
    store = await store_backend.open_store()
    commits = await store_backend.count_commits(store)
    observer = store_backend.observer()  # sees only what is committed
    problems: list[str] = []

    def committed_kinds(run_id: str) -> list[tuple[str, str | None]]:
        return observer.execute(
            "SELECT kind, step_id FROM events WHERE run_id = ? ORDER BY seq", (run_id,)
        ).fetchall()

    registry, scripts = shop_like_tools()
    tools = []
    for tool in registry:

        async def checked(args: object, ctx: ToolContext, script: object = scripts[tool.name]) -> object:  # fmt: skip
            status = observer.execute(
                "SELECT status FROM steps WHERE run_id = ? AND id = ?", (ctx.run_id, ctx.step_id)
            ).fetchone()
            if status != ("running",):
                problems.append(f"{ctx.step_id} called while stored as {status}")
            return await script(args, ctx)  # type: ignore[operator]

        tools.append(dataclasses.replace(tool, handler=checked))

    told: list[tuple[str, str | None]] = []

    async def listener(run: Run, event: RunEvent) -> None:
        told.append((event.kind.value, event.step_id))
        committed = [e for e in committed_kinds(run.id) if e[0] != "decision_claimed"]
        if committed[: len(told)] != told:  # this event, and all before it, are committed
            problems.append(f"told {event.kind.value} before it was committed")

    executor = Executor(ToolRegistry(tools), journal=store, listeners=[listener])
    agent = Agent(ThreeStepPlanner(), executor, store)
    run = await agent.ask("cancel order A1001", user_id=10001, chat_id=10001)
    assert run.status is RunStatus.PAUSED and run.pause is not None
    claimed = await agent.claim(run.id, user_id=10001, approved=True, nonce=run.pause.nonce)
    assert claimed.result is ClaimResult.OK and claimed.run is not None
    # The claim's one round trip returns the full current run, as load_run would.
    assert claimed.run == await store.load_run(run.id)
    assert claimed.run.steps[2].approval is not None and claimed.run.pause is not None
    assert claimed.run.pause.nonce is None and claimed.run.status is RunStatus.RUNNING
    done = await agent.proceed(claimed.run)
    assert done.status is RunStatus.COMPLETED
    stored = committed_kinds(run.id)
    committed = len(commits)  # closing commits once more: its leases lapse at once
    observer.close()
    await store.close()

    assert problems == []
    assert len(stored) == 11  # every transition is still in the log, in order
    assert committed == 6  # 5 by the executor + the claim (was 11); leases ride along
    assert told == [e for e in stored if e[0] != "decision_claimed"]
    assert len(scripts["cancel_order"].calls) == 1


async def test_a_crash_before_a_success_is_committed_reruns_the_step_with_the_same_key(
    store_backend: Backend,
) -> None:
    class CrashingStore(store_backend.store_class):  # type: ignore[name-defined, misc]
        async def record_many(self, run: Run, events: Sequence[RunEvent]) -> None:
            if any(e.kind is EventKind.RUN_FINISHED for e in events):
                raise SystemExit("killed")  # the process dies before this commit
            await super().record_many(run, events)

    first = await store_backend.open_store(CrashingStore)
    executor, scripts = executor_for(first)
    agent = Agent(ThreeStepPlanner(), executor, first)
    run = await agent.ask("cancel order A1001", user_id=10001, chat_id=10001)
    assert run.pause is not None
    with pytest.raises(SystemExit):
        await agent.decide(run.id, user_id=10001, approved=True, nonce=run.pause.nonce)
    await first.close()
    assert len(scripts["cancel_order"].calls) == 1

    store = await store_backend.open_store()
    stored = await store.load_run(run.id)
    assert stored is not None and stored.steps[2].status is StepStatus.RUNNING  # success lost
    recovering, again = executor_for(store)
    recovered = await Agent(ThreeStepPlanner(), recovering, store).recover()
    assert [r.status for r in recovered] == [RunStatus.COMPLETED]
    # Re-issued with the same idempotency key: a real backend replays the first result.
    keys = [ctx.idempotency_key for _, ctx in scripts["cancel_order"].calls]
    keys += [ctx.idempotency_key for _, ctx in again["cancel_order"].calls]
    assert keys == [f"{run.id}:s3", f"{run.id}:s3"]
    assert again["get_order_status"].calls == []  # the committed steps are not re-run
    kinds = [(e.kind.value, e.step_id) for e in await store.history.timeline(run.id)]
    assert kinds.count(("step_started", "s3")) == 2
    assert kinds.count(("step_succeeded", "s3")) == 1
    assert await store.load_run(run.id) == recovered[0]
    await store.close()


async def test_one_bad_write_in_a_shared_commit_does_not_fail_the_others(
    store: RunStore,
) -> None:
    runs = [
        Run(id=f"r{n}", trace_id="t", user_id=n, chat_id=n, request_text=text, language="en")
        for n, text in enumerate(["first", "good", "\udcff bad"])
    ]
    results = await asyncio.gather(
        *(
            store.record(run, RunEvent(kind=EventKind.RUN_PLANNED, run_id=run.id, trace_id="t"))
            for run in runs
        ),
        return_exceptions=True,
    )
    assert results[:2] == [None, None]
    assert isinstance(results[2], StorageUnavailable)
    assert await store.load_run("r1") is not None and await store.load_run("r2") is None
    await store.record(runs[0], RunEvent(kind=EventKind.RUN_FINISHED, run_id="r0", trace_id="t"))


def test_timestamps_keep_their_stored_form_and_parse_back() -> None:
    old_format = "%Y-%m-%dT%H:%M:%S.%fZ"  # what the first schema's rows were written with
    for value in (
        datetime(2026, 11, 30, 8, 19, 0, 123456, tzinfo=UTC),
        datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),  # no microseconds: still 6 digits
        datetime(2026, 6, 1, 12, 0, 0, 1, tzinfo=timezone(timedelta(hours=8))),
    ):
        text = ts(value)
        assert text == value.astimezone(UTC).strftime(old_format)
        assert text is not None and len(text) == 27 and text.endswith("Z")
        assert parse_ts(text) == value
        assert datetime.strptime(text, old_format).replace(tzinfo=UTC) == parse_ts(text)
    earlier, later = utcnow(), utcnow() + timedelta(microseconds=1)
    assert (ts(earlier) or "") < (ts(later) or "")  # text order is time order
    assert ts(None) is None and parse_ts(None) is None
    for bad in ("2026-11-30", "2026-11-30T08:19:00Z", "2026-11-30T08:19:00.123456+00:00"):
        with pytest.raises(ValueError):
            parse_ts(bad)


# Columns added by later migrations: a database of an older version has none of them, so
# writing "as that version" leaves them out (steps: the refusal code; runs: what the planner
# understood, issue 13).
_LATER_STEP_COLUMNS = ("error_code", "depends_on")
_LATER_RUN_COLUMNS = ("interpretation", "unsupported", "clarify_nonce", "pause_approver")


def _schema_as_of(monkeypatch: pytest.MonkeyPatch, version: int) -> None:
    """Open and write databases as stepwise did at schema `version` (until undone)."""
    monkeypatch.setattr(storage.db, "MIGRATIONS", MIGRATIONS[:version])
    step = tuple(c for c in tables.STEP_COLUMNS if c not in _LATER_STEP_COLUMNS)
    state = tuple(c for c in tables.STEP_STATE_COLUMNS if c not in _LATER_STEP_COLUMNS)
    run = tuple(c for c in tables.RUN_COLUMNS if c not in _LATER_RUN_COLUMNS)
    run_state = tuple(c for c in tables.RUN_STATE_COLUMNS if c not in _LATER_RUN_COLUMNS)
    journal = dataclasses.replace(
        storage.runs.sqlite._JOURNAL,
        upsert_run=tables.upsert("runs", run, ("id",)),
        update_run=tables.update("runs", run_state, ("id",)),
        upsert_step=tables.upsert("steps", step, ("run_id", "id")),
        update_step=tables.update("steps", state, ("run_id", "id")),
        # Before leases (storage/leases.py) a status change wrote the status only.
        update_run_status="UPDATE runs SET status = :status WHERE id = :id AND status IS NOT :status",
    )
    monkeypatch.setattr(storage.runs.sqlite, "_JOURNAL", journal)


async def test_a_version_1_database_is_upgraded_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v1.db"
    _schema_as_of(monkeypatch, 1)
    old = await SqliteRunStore.open(path)
    executor, _ = executor_for(
        old, status=[fail(ErrorType.TIMEOUT), {"order_id": "A1001", "status": "shipping"}]
    )
    finished = await executor.start(make_run([STATUS, COMPENSATION]))
    paused_run = make_run([STATUS, CANCEL])
    paused_run.id = "paused"
    paused = await executor.start(paused_run)
    timeline_before = await old.history.timeline(finished.id)
    await old.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
        assert (
            "AUTOINCREMENT"
            in conn.execute("SELECT sql FROM sqlite_master WHERE name = 'events'").fetchone()[0]
        )
        last_seq = conn.execute("SELECT max(seq) FROM events").fetchone()[0]
    monkeypatch.undo()

    store = await SqliteRunStore.open(path)  # migrations 2 onwards run here
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        events_sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'events'").fetchone()
        assert "AUTOINCREMENT" not in events_sql[0]
        assert conn.execute(
            "SELECT count(*) FROM sqlite_sequence WHERE name = 'events'"
        ).fetchone() == (0,)
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert {"events_by_run", "events_failures", "runs_by_user_status"} <= indexes
    assert await store.load_run(finished.id) == finished
    assert await store.load_run("paused") == paused
    assert await store.history.timeline(finished.id) == timeline_before
    counts = await store.history.failure_counts(since=utcnow() - timedelta(hours=1))
    assert [(c.error_type, c.count) for c in counts] == [("timeout", 1)]

    # The old paused run goes on; new events continue the old sequence.
    assert paused.pause is not None
    outcome = await Agent(ThreeStepPlanner(), executor_for(store)[0], store).decide(
        "paused", user_id=10001, approved=True, nonce=paused.pause.nonce
    )
    assert outcome.run is not None and outcome.run.status is RunStatus.COMPLETED
    seqs = [e.seq for e in await store.history.timeline("paused")]
    assert seqs == sorted(seqs) and seqs[-1] > last_seq
    await store.close()


async def test_staff_filter_by_customer_and_status_uses_its_index(tmp_path: Path) -> None:
    store = await SqliteRunStore.open(tmp_path / "runs.db")  # SQLite's query plan
    rows = await fetch(
        store._conn,
        "EXPLAIN QUERY PLAN SELECT r.id FROM runs r WHERE 1 = 1 AND r.user_id = ? AND"
        " r.status = ? ORDER BY r.created_at DESC, r.id DESC LIMIT ? OFFSET ?",
        (1, "failed", 21, 0),
    )
    await store.close()
    plan = " ".join(str(r[3]) for r in rows)
    assert "runs_by_user_status" in plan and "TEMP B-TREE" not in plan


# -- issue 16: every ending is saved and reloaded whole -------------------------------------


async def test_declined_failed_and_expired_runs_reload_with_errors_approvals_and_decisions(
    store: RunStore,
) -> None:
    """Each step's error, the approval and the claim's decision survive a round trip."""
    agent = Agent(ThreeStepPlanner(), executor_for(store)[0], store)

    # Declined: the customer presses Cancel.
    asked = await agent.ask("cancel order A1001", user_id=10001, chat_id=10001)
    assert asked.pause is not None
    declined = await agent.decide(asked.id, user_id=10001, approved=False, nonce=asked.pause.nonce)
    assert declined.result is ClaimResult.OK and declined.run is not None
    assert declined.run.status is RunStatus.DECLINED

    # Failed: the order service answers "not found" (not retryable).
    failing, _ = executor_for(store, status=[fail(ErrorType.NOT_FOUND, "no order A1001")])
    failed_run = make_run([STATUS, CANCEL])
    failed_run.id = "failed"
    failed = await failing.start(failed_run)
    assert failed.status is RunStatus.FAILED

    # Expired: the press comes after the approval window closed.
    late = await agent.ask("cancel order A1001", user_id=10001, chat_id=10001)
    assert late.pause is not None
    expired = await Agent(
        ThreeStepPlanner(), executor_for(store)[0], store, approval_ttl=timedelta(seconds=-1)
    ).decide(late.id, user_id=10001, approved=True, nonce=late.pause.nonce)
    assert expired.result is ClaimResult.EXPIRED and expired.run is not None
    assert expired.run.status is RunStatus.EXPIRED

    for run in (declined.run, failed, expired.run):
        assert await store.load_run(run.id) == run  # every field of the run and its steps

    reloaded = await store.load_run(declined.run.id)
    assert reloaded is not None
    cancel_step = reloaded.steps[2]
    assert cancel_step.approval is not None and cancel_step.approval.approved is False
    assert cancel_step.approval.by_user_id == 10001
    decisions = [
        (e.decision, e.step_id, e.message)
        for e in await store.history.timeline(declined.run.id)
        if e.kind is EventKind.DECISION_CLAIMED
    ]
    assert decisions == [("declined", "s3", "declined by user 10001")]

    reloaded = await store.load_run("failed")
    assert reloaded is not None and reloaded.steps[0].error is not None
    assert reloaded.steps[0].error.type is ErrorType.NOT_FOUND
    assert reloaded.steps[0].error.message == "no order A1001"
    errors = [e.error_type for e in await store.history.timeline("failed") if e.error_type]
    assert errors == ["not_found"]

    reloaded = await store.load_run(expired.run.id)
    assert reloaded is not None and reloaded.status is RunStatus.EXPIRED
    assert reloaded.steps[2].approval is None  # an expired press decides nothing
    assert reloaded.pause is None and reloaded.finished_at is not None
    finished = await store.history.timeline(expired.run.id)
    assert [e.kind for e in finished][-1] is EventKind.RUN_FINISHED
    assert finished[-1].message == "approval expired"
    assert not any(e.kind is EventKind.DECISION_CLAIMED for e in finished)


def test_row_dicts_name_exactly_the_table_columns() -> None:
    """Column order lives in one list per table; the rows must cover those lists exactly."""
    run = make_run([STATUS, CANCEL])
    event = RunEvent(kind=EventKind.RUN_PLANNED, run_id=run.id, trace_id=run.trace_id)
    assert set(tables.run_row(run)) == set(tables.RUN_COLUMNS)
    assert set(tables.run_state_row(run)) == {"id", *tables.RUN_STATE_COLUMNS}
    assert set(tables.step_row(run.id, 0, run.steps[0], None)) == set(tables.STEP_COLUMNS)
    assert set(tables.step_state_row(run.id, run.steps[0], None)) == {
        "run_id",
        "id",
        *tables.STEP_STATE_COLUMNS,
    }
    assert set(tables.event_row(run, event, {})) == set(tables.EVENT_COLUMNS)
    with sqlite3.connect(":memory:") as conn:
        for script in MIGRATIONS:
            conn.executescript(script)
        for table, names in (
            ("runs", tables.RUN_COLUMNS),
            ("steps", tables.STEP_COLUMNS),
            ("events", tables.EVENT_COLUMNS),
        ):
            schema = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
            assert set(names) <= schema


def test_nulls_written_as_literals_leave_the_same_rows_as_bound_nulls() -> None:
    """`NullsInline` writes a row's None values into the SQL as `NULL`: the same rows as
    binding them, one SQL text per pattern of NULLs, and only the other values bound."""
    names = ("k", "a", "b", "c")
    plain = tables.insert("t", names)
    inline = tables.nulls_inline(plain)
    rows = [
        {"k": 1, "a": None, "b": "x", "c": None},
        {"k": 2, "a": None, "b": None, "c": None},
        {"k": 3, "a": 1.5, "b": "y", "c": 7},
        {"k": 4, "a": None, "b": "z", "c": None},
    ]
    sql, params = inline.bind(rows[0])
    assert sql == "INSERT INTO t (k, a, b, c) VALUES (?, NULL, ?, NULL)"
    assert params == (1, "x")
    assert inline.bind(rows[1]) == ("INSERT INTO t (k, a, b, c) VALUES (?, NULL, NULL, NULL)", (2,))
    assert inline.bind(rows[2]) == plain.bind(rows[2])
    assert inline.bind(rows[3])[0] is sql  # the pattern's SQL is made once
    update = tables.nulls_inline(tables.update("t", ("a", "b", "c"), ("k",)))
    assert update.bind({"k": 1, "a": None, "b": "w", "c": None}) == (
        "UPDATE t SET a = NULL, b = ?, c = NULL WHERE k = ?",
        ("w", 1),
    )
    with sqlite3.connect(":memory:") as bound, sqlite3.connect(":memory:") as literal:
        for conn, statement in ((bound, plain), (literal, inline)):
            conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, a, b, c)")
            for row in rows:
                conn.execute(*statement.bind(row))
            conn.execute(*update.bind({"k": 3, "a": None, "b": "w", "c": None}))
        read = "SELECT k, a, typeof(a), b, c, typeof(c) FROM t ORDER BY k"
        assert bound.execute(read).fetchall() == literal.execute(read).fetchall()
    with pytest.raises(ValueError):
        tables.nulls_inline(
            tables.Statement("UPDATE t SET a = ? WHERE k = ? AND n = '?'", ("a", "k"))
        )


async def test_migration_3_turns_the_bots_prose_notices_into_event_kinds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before v3 the bot wrote "prompt shown" and "customer blocked" as notice texts."""
    path = tmp_path / "v2.db"
    _schema_as_of(monkeypatch, 2)
    old = await SqliteRunStore.open(path)
    executor, _ = executor_for(old, status=[{"order_id": "A1003", "status": "pending"}])
    paused = await executor.start(make_run([STATUS, CANCEL]))
    for text in (
        "telegram: confirmation buttons shown",
        "telegram: the customer blocked the bot",
        "something else staff should see",
    ):
        await old.add_event(paused.id, EventKind.NOTICE, text)
    await old.close()
    monkeypatch.undo()

    store = await SqliteRunStore.open(path)
    kinds = [(e.kind, e.message) for e in await store.history.timeline(paused.id)][-3:]
    await store.close()
    assert kinds == [
        (EventKind.PROMPT_SHOWN, "telegram: confirmation buttons shown"),
        (EventKind.CUSTOMER_BLOCKED, "telegram: the customer blocked the bot"),
        (EventKind.NOTICE, "something else staff should see"),
    ]


# -- what only PostgreSQL has ----------------------------------------------------------------


async def test_postgres_schema_is_versioned_and_reopening_applies_nothing_twice(
    postgres_backend: Backend,
) -> None:
    await (await postgres_backend.open_store()).close()
    await (await postgres_backend.open_store()).close()
    again = await migrate_database(postgres_backend.url)
    assert (again.before, again.after) == (len(PG_MIGRATIONS), len(PG_MIGRATIONS))
    observer = postgres_backend.observer()
    versions = observer.execute("SELECT version FROM schema_version ORDER BY version").fetchall()
    observer.close()
    assert [v for (v,) in versions] == list(range(1, len(PG_MIGRATIONS) + 1))


async def test_processes_starting_together_on_a_new_database_migrate_it_once(
    postgres_backend: Backend,
) -> None:
    stores = await asyncio.gather(*(postgres_backend.open_store() for _ in range(4)))
    for opened in stores:
        await opened.close()
    assert postgres_backend.count_rows("schema_version") == len(PG_MIGRATIONS)


def test_postgres_schema_mirrors_sqlite(postgres_backend: Backend) -> None:
    """Every SQLite table, view and column exists in PostgreSQL: a column added to SQLite's
    schema (storage/db.py) must be added to storage/pg_schema.py as well. (Views too, as
    `information_schema.columns` lists theirs: `shop_cancellations` is one on both.)"""
    with sqlite3.connect(":memory:") as conn:
        for script in MIGRATIONS:
            conn.executescript(script)
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
                " AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        sqlite_columns = {
            t: {r[1] for r in conn.execute(f"PRAGMA table_info({t})")} for t in tables
        }
    asyncio.run(postgres_backend.migrate())
    observer = postgres_backend.observer()
    rows = observer.execute(
        "SELECT table_name, column_name FROM information_schema.columns"
        " WHERE table_schema = current_schema()"
    ).fetchall()
    observer.close()
    pg_columns: dict[str, set[str]] = {}
    for table, column in rows:
        pg_columns.setdefault(table, set()).add(column)
    missing = {
        table: sorted(names - pg_columns.get(table, set()))
        for table, names in sqlite_columns.items()
        if names - pg_columns.get(table, set())
    }
    assert missing == {}, f"add these to storage/pg_schema.py: {missing}"
    assert pg_columns.keys() - sqlite_columns.keys() == {"schema_version"}


async def test_recovery_skips_a_run_another_transaction_holds(
    postgres_backend: Backend,
) -> None:
    """`FOR UPDATE SKIP LOCKED`: a run another transaction is taking right now is skipped,
    not waited for (its lease lapsed: both runs are up for recovery)."""
    crashed = await postgres_backend.open_store(lease=Lease("elsewhere:1:x", clock=_minute_ago))
    for run_id in ("held", "free"):
        interrupted = make_run([STATUS])
        interrupted.id = run_id
        await crashed.record(
            interrupted, RunEvent(kind=EventKind.RUN_PLANNED, run_id=run_id, trace_id="t")
        )
    await crashed.close()
    store = await postgres_backend.open_store()
    with psycopg.connect(postgres_backend.url) as other:
        other.execute("SELECT id FROM runs WHERE id = 'held' FOR UPDATE")
        assert await store.runs_to_recover() == ["free"]
        other.rollback()
    assert await store.runs_to_recover() == ["held"]
    await store.close()


async def test_an_unreachable_server_is_one_storage_error_without_the_password() -> None:
    with pytest.raises(StorageUnavailable) as caught:
        await open_store("postgresql://stepwise:s3cret@127.0.0.1:1/shop", busy_timeout_s=1)
    message = str(caught.value)
    assert message.startswith("cannot open database postgresql://stepwise@127.0.0.1:1/shop:")
    assert "s3cret" not in message and "\n" not in message


async def test_migrate_command_reports_what_it_applied(
    store_backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings.model_validate({"STEPWISE_DB": store_backend.url})
    args = argparse.Namespace(command="migrate")
    assert await dispatch(settings, args) == 0
    assert await dispatch(settings, args) == 0
    known = len(PG_MIGRATIONS if store_backend.name == "postgresql" else MIGRATIONS)
    assert capsys.readouterr().out.splitlines() == [
        f"{store_backend.name} schema at version {known} ({known} migration(s) applied)",
        f"{store_backend.name} schema at version {known} (0 migration(s) applied)",
    ]


async def test_a_dropped_connection_fails_one_write_cleanly_and_the_next_one_works(
    postgres_backend: Backend,
) -> None:
    store = await postgres_backend.open_store()
    executor, _ = executor_for(store)
    first = await executor.start(make_run([STATUS]))
    with psycopg.connect(postgres_backend.url, autocommit=True) as admin:
        ended = admin.execute(  # the server ends the store's connections (this test's only)
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE application_name = current_setting('application_name')"
            " AND pid <> pg_backend_pid()"
        ).fetchone()
    assert ended is not None and ended[0] >= 1
    failed: list[str] = []
    for attempt in range(ended[0] + 1):  # a broken pooled connection fails one write, cleanly
        run = make_run([STATUS])
        run.id = f"after{attempt}"
        try:
            done = await executor.start(run)
        except StorageUnavailable:
            failed.append(run.id)
            continue
        assert done.status is RunStatus.COMPLETED
        break
    else:
        pytest.fail(f"no write succeeded after the connections were dropped: {failed}")
    for run_id in failed:
        assert await store.load_run(run_id) is None  # nothing half-written
    assert await store.load_run(first.id) == first
    await store.close()
