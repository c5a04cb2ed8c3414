"""Database trouble: locked, read-only and full — the customer hears "can't proceed right
now", nothing is half-written, and the interrupted run is finished once the fault clears.

- locked: another connection holds `BEGIN IMMEDIATE` (the bot waits STEPWISE_DB_TIMEOUT);
- read-only and full disk: the database lives on a small tmpfs that the test remounts
  read-only or fills up. That needs root (CAP_SYS_ADMIN) for `mount`; without it these
  two tests skip. Linux refuses to remount a file system read-only while a process holds a
  file on it open for writing (EBUSY), so "read-only" is tested the way it happens to a
  server: the bot dies, the disk comes back read-only, the bot cannot start; then rw again.
- full database, portable (no mount): SQLite's `max_page_count` on the bot's connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_core.models import EventKind, Language, Run, RunEvent
from bot.texts import TEXTS
from standin import StandIn
from storage.runs.sqlite import SqliteRunStore

from .conftest import (
    ServeProcess,
    bot_texts,
    consistency_problems,
    press,
    prompt_for,
    query,
    start_bot,
    stepwise,
    until,
    write_seed,
)

BUSY = TEXTS["busy"]["en"]
BUSY_RESUME = TEXTS["busy_resume"]["en"]


@contextlib.contextmanager
def locked(db: Path) -> Iterator[None]:
    """Another process's write transaction, held until the block ends."""
    blocker = sqlite3.connect(db, isolation_level=None, timeout=10)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        yield
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


def _count(standin: StandIn, chat: int, text: str) -> int:
    return sum(text in t for t in bot_texts(standin, chat))


async def test_locked_database_says_busy_writes_nothing_and_recovers(
    standin: StandIn, tmp_path: Path
) -> None:
    seed = tmp_path / "seed.json"
    (customer,) = write_seed(seed, [61001])
    user, db = customer.user_id, tmp_path / "bot.db"
    env = {
        "STEPWISE_SHOP_SEED": str(seed),
        "STEPWISE_DB_TIMEOUT": "0.3",
        "STEPWISE_SHOP_LATENCY_MS": "600",
    }
    serve = ServeProcess(standin, db, tmp_path, env=env)
    await serve.start()
    try:
        # 1. Locked when the question arrives: "busy", and no trace of a run.
        question = f"where is order {customer.shipping[0]}"
        with locked(db):
            standin.inject_message(user, user, question)
            await until(lambda: _count(standin, user, BUSY), what="busy reply")
        assert query(db, "SELECT count(*) FROM runs WHERE request_text = ?", question) == [(0,)]
        standin.inject_message(user, user, question)  # asked again once it is free: answered
        await until(lambda: _count(standin, user, "is on its way"), what="answer once unlocked")

        # 2. Locked after a confirmed cancellation was done by the shop, before the run
        #    recorded it: the customer is not told that nothing changed.
        order = customer.pending[0]
        standin.inject_message(user, user, f"cancel order {order}")
        run_id = (await until(lambda: query(db, "SELECT id FROM runs WHERE status = 'paused'")))[0][
            0
        ]
        prompt = await until(lambda: prompt_for(standin, user, run_id), what="prompt")
        press(standin, user, prompt, approve=True, user=user)
        await until(lambda: query(db, "SELECT count(*) FROM shop_cancellations") == [(1,)])
        with locked(db):
            await until(lambda: _count(standin, user, BUSY_RESUME), what="busy reply on resume")
            assert query(db, "SELECT status FROM runs WHERE id = ?", run_id) == [("running",)]
            assert query(db, "SELECT status FROM steps WHERE run_id = ? ORDER BY position", run_id) == [("done",), ("running",)]  # fmt: skip
            assert consistency_problems(db) == []
        assert _count(standin, user, BUSY) == 1, "only the first question was refused outright"

        # 3. A restart (the lock is gone) finishes the interrupted run: cancelled once.
        assert await serve.stop() == 0
        serve.env["STEPWISE_SHOP_LATENCY_MS"] = "0"
        await serve.start()
        await until(
            lambda: _count(standin, user, f"Order {order} has been cancelled."),
            what="the interrupted run finished after the restart",
        )
        assert query(db, "SELECT status FROM runs WHERE id = ?", run_id) == [("completed",)]
        assert query(db, "SELECT count(*) FROM shop_cancellations") == [(1,)]
        assert consistency_problems(db) == []
    finally:
        await serve.stop()


# -- a small tmpfs -------------------------------------------------------------------------


def _sh(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs; skips where mounting is not permitted (not root, no CAP_SYS_ADMIN)."""
    if shutil.which("mount") is None or shutil.which("umount") is None:
        pytest.skip("mount/umount not available")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    mounted = _sh("mount", "-t", "tmpfs", "-o", "size=2m,mode=0755", "tmpfs", str(mnt))
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield mnt
    finally:
        _sh("umount", "-l", str(mnt))


def _remount(mnt: Path, mode: str) -> None:
    done = _sh("mount", "-o", f"remount,{mode}", str(mnt))
    if done.returncode != 0:
        pytest.skip(f"cannot remount {mode}: {done.stderr.strip()}")


def _fill(mnt: Path) -> Path:
    """Use up every free byte of the file system; returns the filler file."""
    filler = mnt / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for size in (65536, 4096, 1):  # big writes, then whatever is left
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    assert shutil.disk_usage(mnt).free < 4096
    return filler


def _digest(directory: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.iterdir())
        if p.name.startswith("bot.db")
    }


async def test_read_only_database_says_busy_writes_nothing_and_recovers(
    standin: StandIn, tmp_path: Path, tmpfs: Path
) -> None:
    seed = tmp_path / "seed.json"
    (customer,) = write_seed(seed, [62001])
    user, db = customer.user_id, tmpfs / "bot.db"
    first, second = (f"where is order {o}" for o in customer.shipping)
    env = {"STEPWISE_SHOP_SEED": str(seed), "STEPWISE_SHOP_LATENCY_MS": "800"}
    serve = ServeProcess(standin, db, tmp_path, env=env)
    await serve.start()
    try:
        standin.inject_message(user, user, first)
        await until(lambda: query(db, "SELECT 1 FROM steps WHERE status = 'running'"))
        await serve.kill()  # the server dies mid-step; its disk comes back read-only
        _remount(tmpfs, "ro")
        before = _digest(tmpfs)

        # Read-only: the bot still starts and answers "busy"; the CLI exits 4, one line.
        await serve.start()
        standin.inject_message(user, user, second)
        await until(lambda: _count(standin, user, BUSY), what="busy reply, read-only")
        for args in (("recover",), ("ask", "where is A1001", "--user", "10001")):
            code, out, err = await stepwise(db, *args, workdir=tmp_path, **env)
            assert code == 4, (args, code, err)
            assert "storage unavailable" in err and err.count("\n") == 1, err
            assert "Traceback" not in out + err
        assert await serve.stop() == 0
        assert _digest(tmpfs) == before  # nothing written, not even half
        assert query(db, "SELECT request_text, status FROM runs") == [(first, "running")]

        # Writable again: a restart finishes the interrupted run, and answers the message
        # refused while read-only: it was never acknowledged, so Telegram delivers it again.
        _remount(tmpfs, "rw")
        await serve.start()
        await until(
            lambda: _count(standin, user, "is on its way") == 2,
            what="interrupted run done, the refused message answered without being re-sent",
        )
        assert sorted(query(db, "SELECT request_text FROM runs")) == sorted([(first,), (second,)])
        standin.inject_message(user, user, second)
        await until(lambda: _count(standin, user, "is on its way") == 3, what="served again")
        assert query(db, "SELECT count(*) FROM runs WHERE status != 'completed'") == [(0,)]
        assert consistency_problems(db) == []
    finally:
        await serve.stop()


async def test_a_bot_started_on_a_read_only_disk_heals_when_it_is_writable_again(
    standin: StandIn, tmp_path: Path, tmpfs: Path
) -> None:
    seed = tmp_path / "seed.json"
    (customer,) = write_seed(seed, [62501])
    user, db = customer.user_id, tmpfs / "bot.db"
    serve = ServeProcess(standin, db, tmp_path, env={"STEPWISE_SHOP_SEED": str(seed)})
    await serve.start()
    await serve.kill()  # its -wal and -shm stay: a later read-only open succeeds
    _remount(tmpfs, "ro")
    await serve.start()
    try:
        standin.inject_message(user, user, f"where is order {customer.shipping[0]}")
        await until(lambda: _count(standin, user, BUSY), what="busy reply, read-only")
        _remount(tmpfs, "rw")
        standin.inject_message(user, user, f"where is order {customer.shipping[1]}")
        await until(
            lambda: _count(standin, user, "is on its way"),
            within=30,
            what="answered once the disk is writable again",
        )
    except BaseException:
        # Say what the bot logged, what Telegram saw and whether the mount is writable.
        print(serve.tail(120))
        print("mount flags:", "ro" if os.statvfs(tmpfs).f_flag & os.ST_RDONLY else "rw")
        print("calls:", [f"{c.method}->{c.status}" for c in standin.calls()[-20:]])
        raise
    finally:
        await serve.stop()


async def test_full_disk_says_busy_writes_nothing_and_recovers(
    standin: StandIn, tmp_path: Path, tmpfs: Path
) -> None:
    seed = tmp_path / "seed.json"
    (customer,) = write_seed(seed, [63001])
    user, db = customer.user_id, tmpfs / "bot.db"
    env = {
        "STEPWISE_SHOP_SEED": str(seed),
        "STEPWISE_SHOP_LATENCY_MS": "600",
        "STEPWISE_LEASE": "2",  # its periodic recovery runs every second
    }
    serve = ServeProcess(standin, db, tmp_path, env=env)
    await serve.start()
    try:
        first, second = (f"where is order {o}" for o in customer.shipping)
        # 1. Full when the question arrives.
        filler = _fill(tmpfs)
        standin.inject_message(user, user, first)
        await until(lambda: _count(standin, user, BUSY), what="busy reply on a full disk")
        assert consistency_problems(db) == []
        assert query(db, "SELECT status FROM runs WHERE request_text = ?", first) in ([], [("running",)])  # fmt: skip
        filler.unlink()

        # 2. Full in the middle of a step.
        standin.inject_message(user, user, second)
        await until(lambda: query(db, "SELECT 1 FROM steps WHERE status = 'running'"))
        filler = _fill(tmpfs)
        await until(lambda: _count(standin, user, BUSY) == 2, what="busy reply mid-run")
        assert consistency_problems(db) == []
        filler.unlink()

        # 3. Space again: the bot finishes what was interrupted by itself, without a restart
        # (its periodic recovery takes back the run whose drive failed; issue 15). Another
        # process (`stepwise recover`) would wait for the bot's lease on it to lapse.
        await until(
            lambda: query(db, "SELECT count(*) FROM runs WHERE status != 'completed'") == [(0,)],
            within=10,
            what="the interrupted run finished by the running bot",
        )
        assert query(db, "SELECT count(*) FROM runs WHERE request_text = ?", second) == [(1,)]
        assert consistency_problems(db) == []
        standin.inject_message(user, user, first)  # and the bot serves again
        await until(lambda: _count(standin, user, "is on its way"), what="answered again")
    finally:
        await serve.stop()


async def test_full_database_by_page_limit_says_busy_and_recovers(
    standin: StandIn, tmp_path: Path
) -> None:
    """The same without mount: SQLite's max_page_count makes the bot's database 'full'."""
    bot = await start_bot(standin, tmp_path / "bot.db")
    try:
        standin.inject_message(10001, 10001, "where is order A1001")
        await until(lambda: _count(standin, 10001, "is on its way"), what="warm-up answer")
        pages = query(bot.db, "PRAGMA page_count")[0][0]
        connections = [bot.runtime.store._conn, bot.runtime.shop._conn]  # the app's own
        for conn in connections:
            await conn.execute(f"PRAGMA max_page_count = {pages}")
        for sent in range(1, 41):  # rows fill the last pages first; then a page is refused
            standin.inject_message(10001, 10001, f"where is order A100{sent % 5 + 1}")

            def settled(sent: int = sent) -> bool:
                runs = len(query(bot.db, "SELECT 1 FROM runs"))
                return runs + _count(standin, 10001, BUSY) > sent

            await until(settled, what="answered or refused")
            if _count(standin, 10001, BUSY):
                break
        assert _count(standin, 10001, BUSY) >= 1, "the database never filled up"
        assert consistency_problems(bot.db) == []
        for conn in connections:
            await conn.execute("PRAGMA max_page_count = 1073741823")
        await bot.runtime.agent.recover()
        assert query(bot.db, "SELECT count(*) FROM runs WHERE status = 'running'") == [(0,)]
        assert consistency_problems(bot.db) == []
    finally:
        await bot.stop()


async def test_undecodable_request_is_bad_input_not_an_outage(tmp_path: Path) -> None:
    db = tmp_path / "bot.db"
    code, out, err = await stepwise(
        db, "ask", "\udcff where is A1001", "--user", "10001", workdir=tmp_path
    )
    assert code in (0, 1, 2), (code, err)
    assert "storage unavailable" not in err and "never retrieved" not in err, err


async def test_one_bad_write_does_not_fail_another_customers_write(tmp_path: Path) -> None:
    store = await SqliteRunStore.open(tmp_path / "bot.db")
    try:
        good, bad = (
            Run(id=f"r{n}", trace_id=f"t{n}", user_id=n, chat_id=n, request_text=text,
                language=Language.EN)
            for n, text in ((1, "where is A1001"), (2, "\udcff where is A1001"))
        )  # fmt: skip
        results = await asyncio.gather(
            *(
                store.record(
                    run, RunEvent(kind=EventKind.RUN_PLANNED, run_id=run.id, trace_id=run.trace_id)
                )
                for run in (good, bad)
            ),
            return_exceptions=True,
        )
        assert results[0] is None, results[0]
        assert await store.load_run("r1") is not None
    finally:
        await store.close()
