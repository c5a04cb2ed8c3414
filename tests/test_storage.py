"""The SQLite run store: every transition durable, decisions claimed exactly once."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import aiosqlite
import pytest

from agent_core.agent import ClaimResult
from agent_core.executor import Executor
from agent_core.models import ErrorType, EventKind, Run, RunEvent, RunStatus, StepStatus, utcnow
from agent_core.tools import Tool, ToolRegistry
from storage.db import MIGRATIONS, StorageUnavailable
from storage.runs import SqliteRunStore
from tests.fakes import OrderArgs, RecordingSleep, fail, make_run, shop_like_tools

STATUS = ("get_order_status", {"order_id": "A1001"}, "order_status")
COMPENSATION = (
    "search_policy",
    {"query": "delay compensation", "lang": "en"},
    "delay_compensation",
)
CANCEL = ("cancel_order", {"order_id": "A1001"}, "cancel")

FAR_PAST = utcnow() - timedelta(days=365)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteRunStore]:
    store = await SqliteRunStore.open(tmp_path / "runs.db")
    yield store
    await store.close()


def executor_for(store: SqliteRunStore, **tools: list[object]) -> tuple[Executor, dict]:  # type: ignore[type-arg]
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


async def test_stored_run_round_trips_exactly(store: SqliteRunStore) -> None:
    executor, _ = executor_for(
        store,
        status=[fail(ErrorType.TIMEOUT), {"order_id": "A1001", "status": "delivered"}],
    )
    run = await executor.start(make_run([STATUS, COMPENSATION]))
    loaded = await store.load_run(run.id)
    assert loaded == run
    assert Run.model_validate_json(loaded.model_dump_json()) == run


async def test_every_transition_is_in_the_timeline_in_order(store: SqliteRunStore) -> None:
    executor, _ = executor_for(
        store,
        status=[fail(ErrorType.TIMEOUT, "slow"), {"order_id": "A1001", "status": "delivered"}],
    )
    run = await executor.start(make_run([STATUS, COMPENSATION]))
    timeline = await store.timeline(run.id)
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


async def test_running_row_is_committed_before_the_tool_runs(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    store = await SqliteRunStore.open(path)
    seen: list[tuple[str, str]] = []

    _, scripts = shop_like_tools()
    original = scripts["get_order_status"]

    async def peek(args: object, ctx: object) -> object:
        # Another connection sees the committed state at the instant the tool is called.
        async with aiosqlite.connect(path) as other:
            async with other.execute("SELECT status FROM steps WHERE id = 's1'") as cur:
                row = await cur.fetchone()
            async with other.execute("SELECT kind FROM events ORDER BY seq DESC LIMIT 1") as cur:
                last = await cur.fetchone()
        assert row is not None and last is not None
        seen.append((row[0], last[0]))
        return await original(args, ctx)  # type: ignore[arg-type]

    executor = Executor(
        ToolRegistry([Tool("get_order_status", "s", OrderArgs, peek)]), journal=store
    )
    await executor.start(make_run([STATUS]))
    await store.close()
    assert seen == [("running", "step_started")]


async def test_double_confirm_has_one_winner_and_one_side_effect(store: SqliteRunStore) -> None:
    executor, scripts = executor_for(store)
    run = await executor.start(make_run([STATUS, CANCEL]))
    assert run.pause is not None and run.pause.nonce
    nonce = run.pause.nonce

    first = await store.claim_pause(
        run.id, user_id=10001, approved=True, nonce=nonce, now=utcnow(), expires_before=FAR_PAST
    )
    second = await store.claim_pause(
        run.id, user_id=10001, approved=True, nonce=nonce, now=utcnow(), expires_before=FAR_PAST
    )
    assert (first, second) == (ClaimResult.OK, ClaimResult.ALREADY_HANDLED)

    claimed = await store.load_run(run.id)
    assert claimed is not None and claimed.status is RunStatus.RUNNING
    assert claimed.steps[1].approval is not None and claimed.steps[1].approval.approved
    done = await executor.drive(claimed)
    assert done.status is RunStatus.COMPLETED
    assert len(scripts["cancel_order"].calls) == 1


async def test_concurrent_claims_from_two_connections_have_one_winner(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    a = await SqliteRunStore.open(path)
    b = await SqliteRunStore.open(path)
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
    assert sorted(r.value for r in results) == ["already_handled"] * 3 + ["ok"]


async def test_someone_else_cannot_decide_and_the_run_is_untouched(store: SqliteRunStore) -> None:
    executor, _ = executor_for(store)
    run = await executor.start(make_run([STATUS, CANCEL]))
    assert run.pause is not None
    result = await store.claim_pause(
        run.id,
        user_id=666,
        approved=True,
        nonce=run.pause.nonce,
        now=utcnow(),
        expires_before=FAR_PAST,
    )
    assert result is ClaimResult.NOT_ALLOWED
    assert await store.load_run(run.id) == run


async def test_forged_or_stale_nonce_is_refused(store: SqliteRunStore) -> None:
    executor, _ = executor_for(store)
    run = await executor.start(make_run([STATUS, CANCEL]))
    result = await store.claim_pause(
        run.id, user_id=10001, approved=True, nonce="forged", now=utcnow(), expires_before=FAR_PAST
    )
    assert result is ClaimResult.STALE
    assert await store.load_run(run.id) == run
    missing = await store.claim_pause(
        "nope", user_id=10001, approved=True, nonce=None, now=utcnow(), expires_before=FAR_PAST
    )
    assert missing is ClaimResult.NOT_FOUND


async def test_expired_pause_is_marked_expired_and_runs_nothing(store: SqliteRunStore) -> None:
    executor, scripts = executor_for(store)
    run = await executor.start(make_run([STATUS, CANCEL]))
    assert run.pause is not None
    result = await store.claim_pause(
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


async def test_locked_database_waits_boundedly_then_fails_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    store = await SqliteRunStore.open(path, busy_timeout_s=0.2)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        executor, scripts = executor_for(store)
        with pytest.raises(StorageUnavailable, match=r"busy|locked"):
            await executor.start(make_run([STATUS]))
        assert scripts["get_order_status"].calls == []
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert await store.load_run("run1") is None  # nothing half-written
    executor, _ = executor_for(store)
    run = await executor.start(make_run([STATUS]))
    assert (await store.load_run(run.id)) == run  # and it works once the lock is gone
    await store.close()


async def test_history_filters_pages_and_counts_failures(store: SqliteRunStore) -> None:
    for number in range(5):
        executor, _ = executor_for(
            store, status=[fail(ErrorType.NOT_FOUND)] if number % 2 else [{"status": "shipping"}]
        )
        run = make_run([STATUS], user_id=100 + number % 2)
        run.id = f"run{number}"
        await executor.start(run)

    page = await store.list_runs(limit=2)
    assert [r.id for r in page.items] == ["run4", "run3"] and page.next_cursor
    page2 = await store.list_runs(limit=2, before=page.next_cursor)
    assert [r.id for r in page2.items] == ["run2", "run1"]
    page3 = await store.list_runs(limit=2, before=page2.next_cursor)
    assert [r.id for r in page3.items] == ["run0"] and page3.next_cursor is None

    failed = await store.list_runs(status=RunStatus.FAILED)
    assert {r.id for r in failed.items} == {"run1", "run3"}
    mine = await store.list_runs(user_id=100)
    assert {r.id for r in mine.items} == {"run0", "run2", "run4"}
    assert (await store.list_runs(trace_id="nope")).items == []

    counts = await store.failure_counts(since=utcnow() - timedelta(hours=1))
    assert [(c.error_type, c.tool, c.count) for c in counts] == [
        ("not_found", "get_order_status", 2)
    ]
    assert await store.status_counts(since=utcnow() - timedelta(hours=1)) == {
        "completed": 3,
        "failed": 2,
    }


async def test_runs_left_running_are_offered_for_recovery(store: SqliteRunStore) -> None:
    executor, _ = executor_for(store)
    paused = await executor.start(make_run([STATUS, CANCEL]))
    interrupted = make_run([STATUS])
    interrupted.id = "crashed"
    interrupted.steps[0].status = StepStatus.RUNNING
    await store.record(
        interrupted,
        RunEvent(kind=EventKind.RUN_PLANNED, run_id="crashed", trace_id="t"),
    )
    assert await store.runs_to_recover() == ["crashed"]
    assert paused.status is RunStatus.PAUSED


async def test_last_order_id_is_per_chat_and_user(store: SqliteRunStore) -> None:
    executor, _ = executor_for(store)
    run = make_run([("get_order_status", {"order_id": "A1005"}, "order_status")])
    await executor.start(run)
    assert await store.last_order_id(run.chat_id, run.user_id) == "A1005"
    assert await store.last_order_id(run.chat_id, 999) is None
    assert await store.last_order_id(424242, run.user_id) is None


async def test_concurrent_runs_share_commits_and_tools_only_see_durable_rows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "group.db"
    store = await SqliteRunStore.open(path)
    commits: list[str] = []
    await store._conn.set_trace_callback(  # observe what SQLite actually runs
        lambda sql: commits.append(sql) if sql.strip().upper() == "COMMIT" else None
    )
    observer = sqlite3.connect(path)
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
    observer.close()
    events = (await store._fetch("SELECT count(*) FROM events", ()))[0][0]
    await store.close()

    assert all(r.status is RunStatus.COMPLETED for r in finished)
    assert seen == ["running"] * 30  # every tool call came after its running row was durable
    assert events == 30 * 4  # planned, started, succeeded, finished
    assert len(commits) < events / 2  # transitions of concurrent runs shared commits
