"""Both storage backends for ONE conformance suite: a storage test asks for `store_backend`
and runs once on SQLite and once on PostgreSQL.

A `Backend` is one fresh database: a SQLite file in the test's tmp_path, or a PostgreSQL
schema of its own (random name, created for the test and dropped after it, reached through
the URL's `search_path`), so PostgreSQL tests can run in parallel and leave nothing. Its
`url` is what `STEPWISE_DB` would be, and it offers what tests need beside the store: a
second connection that sees only committed rows, a write lock held by someone else, a
failing trigger, rows written directly.

PostgreSQL is expected at `STEPWISE_TEST_PG` (default: the project's 127.0.0.1:5432, trust
auth, database `test`). Without a server the PostgreSQL half is left out with ONE line
after collection (`deselect_without_server`), and fails instead under `CI=true`: CI must
run it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
import pytest

from storage.db import MIGRATIONS, connect
from storage.pg import describe, pg_sql
from storage.pg import migrate as pg_migrate
from storage.runs.postgres import PgRunStore
from storage.runs.sqlite import SqliteRunStore
from storage.shop.postgres import PgShop
from storage.shop.sqlite import SqliteShop
from tests.browser.seed import bulk_runs

PG_URL = os.environ.get("STEPWISE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
BACKENDS = ("sqlite", "postgresql")
# Every table a test may need write-locked, as SQLite's BEGIN IMMEDIATE locks the file.
_TABLES = (
    "runs",
    "steps",
    "events",
    "shop_orders",
    "shop_policies",
    "shop_ledger",
    "shop_returns",
    "shop_refunds",
    "shop_meta",
)


class Observer:
    """Another connection, in autocommit: it sees only what the store has committed.

    `execute` takes SQLite's `?` placeholders on both backends and returns a cursor
    (`fetchone`, `fetchall`) of plain tuples.
    """

    def __init__(self, conn: sqlite3.Connection | psycopg.Connection[Any], postgres: bool):
        self._conn = conn
        self._postgres = postgres

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        if self._postgres:
            return self._conn.execute(pg_sql(sql), params)  # type: ignore[arg-type]
        return self._conn.execute(sql, params)

    def close(self) -> None:
        self._conn.close()


class Backend(ABC):
    name: str
    url: str  # what STEPWISE_DB would be
    store_class: type[Any]  # this backend's run store

    @abstractmethod
    async def open_store(self, cls: type[Any] | None = None, **options: Any) -> Any:
        """A run store on this database (`cls`: a subclass of this backend's store)."""

    @abstractmethod
    async def open_shop(self, **options: Any) -> Any:
        """The demo shop on this database (seeded unless it is already)."""

    @abstractmethod
    async def migrate(self) -> None:
        """The schema, and nothing else (no shop seed)."""

    @abstractmethod
    def observer(self) -> Observer: ...

    @abstractmethod
    def write_locked(self) -> contextlib.AbstractContextManager[None]:
        """Another connection holds the write lock for the duration."""

    @abstractmethod
    def fail_inserts(self, table: str, message: str) -> None:
        """From now on, inserting into `table` fails with `message` (a trigger)."""

    @abstractmethod
    async def count_commits(self, store: Any) -> list[str]:
        """A list that grows by one for every transaction `store` commits from now on."""

    @abstractmethod
    def bulk_runs(self, count: int) -> None:
        """`tests.browser.seed.bulk_runs`: `count` completed runs, written directly."""

    def count_rows(self, table: str) -> int:
        observer = self.observer()
        try:
            return int(observer.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        finally:
            observer.close()


class SqliteBackend(Backend):
    name = "sqlite"
    store_class = SqliteRunStore

    def __init__(self, path: Path) -> None:
        self.path = path
        self.url = str(path)

    async def open_store(self, cls: type[Any] | None = None, **options: Any) -> Any:
        return await (cls or self.store_class).open(self.path, **options)

    async def open_shop(self, **options: Any) -> Any:
        return await SqliteShop.open(self.path, **options)

    async def migrate(self) -> None:
        await (await connect(self.path)).close()

    def observer(self) -> Observer:
        return Observer(sqlite3.connect(self.path, isolation_level=None), postgres=False)

    @contextlib.contextmanager
    def write_locked(self) -> Iterator[None]:
        blocker = sqlite3.connect(self.path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()

    def fail_inserts(self, table: str, message: str) -> None:
        with sqlite3.connect(self.path) as raw:
            raw.execute(
                f"CREATE TRIGGER fail_{table} BEFORE INSERT ON {table} "
                f"BEGIN SELECT RAISE(ABORT, '{message}'); END"
            )

    async def count_commits(self, store: Any) -> list[str]:
        commits: list[str] = []
        # What SQLite actually runs on the store's connection.
        await store._conn.set_trace_callback(
            lambda sql: commits.append(sql) if sql.strip().upper() == "COMMIT" else None
        )
        return commits

    def bulk_runs(self, count: int) -> None:
        bulk_runs(self.path, count)


class PostgresBackend(Backend):
    name = "postgresql"
    store_class = PgRunStore

    def __init__(self, schema: str) -> None:
        self.schema = schema
        self.url = with_search_path(PG_URL, schema)

    async def open_store(self, cls: type[Any] | None = None, **options: Any) -> Any:
        options.pop("synchronous", None)  # SQLite's durability knob; PostgreSQL's is fsync
        return await (cls or self.store_class).open(self.url, **options)

    async def open_shop(self, **options: Any) -> Any:
        return await PgShop.open(self.url, **options)

    async def migrate(self) -> None:
        conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
        try:
            await pg_migrate(conn)
        finally:
            await conn.close()

    def observer(self) -> Observer:
        return Observer(psycopg.connect(self.url, autocommit=True), postgres=True)

    @contextlib.contextmanager
    def write_locked(self) -> Iterator[None]:
        with psycopg.connect(self.url) as blocker:  # a transaction until the block ends
            blocker.execute(f"LOCK TABLE {', '.join(_TABLES)} IN EXCLUSIVE MODE")
            try:
                yield
            finally:
                blocker.rollback()

    def fail_inserts(self, table: str, message: str) -> None:
        with psycopg.connect(self.url, autocommit=True) as raw:
            raw.execute(
                f"CREATE FUNCTION fail_{table}() RETURNS trigger LANGUAGE plpgsql AS"
                f" $$ BEGIN RAISE EXCEPTION '{message}'; END $$"
            )
            raw.execute(
                f"CREATE TRIGGER fail_{table} BEFORE INSERT ON {table}"
                f" FOR EACH ROW EXECUTE FUNCTION fail_{table}()"
            )

    async def count_commits(self, store: Any) -> list[str]:
        """Every write of a PgRunStore is one `run_transaction` call: BEGIN … COMMIT."""
        commits: list[str] = []
        transact = store._writes._transact

        async def counted(operations: Sequence[Any]) -> list[Any]:
            results = await transact(operations)
            commits.append("COMMIT")
            return list(results)

        store._writes._transact = counted
        return commits

    def bulk_runs(self, count: int) -> None:
        """The very rows `tests.browser.seed.bulk_runs` writes to SQLite, copied over
        (all columns but `seq`, which PostgreSQL assigns in the same order)."""
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "bulk.db"
            with contextlib.closing(sqlite3.connect(path)) as scratch:
                for script in MIGRATIONS:
                    scratch.executescript(script)
            bulk_runs(path, count)
            with (
                contextlib.closing(sqlite3.connect(path)) as source,
                psycopg.connect(self.url) as target,
            ):
                for table, order in (("runs", "rowid"), ("steps", "rowid"), ("events", "seq")):
                    info = source.execute(f"PRAGMA table_info({table})")
                    names = ", ".join(r[1] for r in info if r[1] != "seq")
                    rows = source.execute(f"SELECT {names} FROM {table} ORDER BY {order}")
                    with target.cursor().copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                        for row in rows:
                            copy.write_row(row)


def with_search_path(url: str, schema: str) -> str:
    """`url` whose connections use `schema` (libpq's `options`, percent-encoded) and are
    named after it (`application_name`), so a test can find its own connections."""
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}options={quote(f'-csearch_path={schema}')}&application_name={schema}"


@cache
def postgres_problem() -> str | None:
    """Why PostgreSQL cannot be used here, or None when it can (asked once per session)."""
    try:
        psycopg.connect(PG_URL, connect_timeout=3).close()
    except psycopg.Error as exc:
        return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return None


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _no_server() -> str:
    return f"no PostgreSQL server at {describe(PG_URL)} ({postgres_problem()})"


def require_postgres() -> None:
    if postgres_problem() is None:
        return
    if in_ci():
        pytest.fail(f"{_no_server()}; under CI=true the PostgreSQL half of the suite must run")
    pytest.skip(f"{_no_server()}; set STEPWISE_TEST_PG to use another server")


def uses_postgres(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    on_postgres = callspec is not None and callspec.params.get("store_backend") == "postgresql"
    return on_postgres or "postgres_backend" in getattr(item, "fixturenames", ())


_left_out: list[int] = []


def deselect_without_server(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without a server (and not in CI), leave the PostgreSQL tests out: one line, not one
    skip per test. In CI they stay, and each fails in `require_postgres`."""
    postgres = [item for item in items if uses_postgres(item)]
    if not postgres or in_ci() or postgres_problem() is None:
        return
    config.hook.pytest_deselected(items=postgres)
    items[:] = [item for item in items if not uses_postgres(item)]
    _left_out.append(len(postgres))


def postgres_report() -> list[str]:
    """The one line `deselect_without_server` owes the reader."""
    if not _left_out:
        return []
    return [
        f"{sum(_left_out)} PostgreSQL tests left out: {_no_server()}; "
        "set STEPWISE_TEST_PG to use another server (under CI=true they fail instead)"
    ]


@contextlib.contextmanager
def fresh_schema() -> Iterator[str]:
    """A schema of its own for one test, dropped afterwards with everything in it."""
    require_postgres()
    schema = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    try:
        yield schema
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as admin:
            admin.execute("SET lock_timeout = '20s'")
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


@contextlib.contextmanager
def backend(name: str, tmp_path: Path) -> Iterator[Backend]:
    if name == "sqlite":
        yield SqliteBackend(tmp_path / "stepwise.db")
        return
    with fresh_schema() as schema:
        yield PostgresBackend(schema)


@pytest.fixture(params=BACKENDS)
def store_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """One fresh database per test, on each backend in turn."""
    with backend(request.param, tmp_path) as chosen:
        yield chosen


@pytest.fixture
def postgres_backend(tmp_path: Path) -> Iterator[Backend]:
    """A fresh PostgreSQL schema, for the tests of what only PostgreSQL has."""
    with backend("postgresql", tmp_path) as chosen:
        yield chosen
