"""Every read staff make of the run history: the bot's staff commands, the CLI, the console.

`History` reads through the run store's own connection (`store.history`); nothing outside
storage writes SQL against the runs tables. The same queries serve both backends: a
`Dialect` holds the few spellings PostgreSQL needs differently (planner hints SQLite needs
and PostgreSQL rejects, its case-insensitive LIKE, EXPLAIN), and the store hands `History`
its own way to read (`Reader`). Two ways to list runs:

* `list_runs`: filters by status, user, chat, trace and time; pages by cursor, or by a
  small `offset` (the chat's ◀ ▶ buttons).
* `search_runs`: what the console's filter form asks for (`RunFilter`: also error type,
  tool and free text), keyset-paged in both directions (`Cursor`).

Every query is shaped to stay fast at 100,000+ runs:

* Pages are keyset pages on `(created_at, id)`, newest first, walked along the
  `runs_by_created` / `runs_by_status` / `runs_by_user` indexes: a page reads about
  `limit / selectivity` runs, never the whole table (`search_runs` never uses OFFSET).
* Error-type filters start from the partial index `events_failures` (failures are rare, so
  that index is small) and join the matching runs by primary key.
* The staff's counts (`/stats`, the console's overview): runs by status from the hourly
  roll-up `run_counts_hourly` (migration 10: bounded whatever the history's size), failed
  attempts by error type and tool from the partial index `events_failure_kinds` (linear in
  the window's failures, which are few; see `failure_counts`).
* A tool filter (without an error type) is a per-run probe of the `steps` primary key while
  walking runs newest first. Dense in practice (every run uses one of a few tools); a tool
  that almost never occurs walks the whole time range, which the time filter bounds.
* Free text is `LIKE '%…%'` on `request_text`: no index can serve a substring match, so it
  is a walk of the time range. It is therefore always limited to a time range
  (`TEXT_SEARCH_WINDOW` unless staff set one). Full-text search (FTS5) would lift that
  limit at the cost of a second copy of every request text and a migration.
"""

from __future__ import annotations

import statistics
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from typing import Any, Protocol

from agent_core.models import RunStatus, utcnow
from storage.db import MIGRATIONS
from storage.pg_schema import PG_MIGRATIONS
from storage.records import FailureCount, RunPage, RunSummary, TimelineEntry
from storage.tables import (
    SUMMARY_SELECT,
    TIMELINE_COLUMNS,
    columns,
    parse_ts,
    summary_from_row,
    timeline_entry_from_row,
    ts,
)

# An error-type filter value meaning "any failure at all".
ANY_ERROR = "any"
TEXT_SEARCH_WINDOW = timedelta(days=30)
MAX_PAGE = 200
_RECENT_RUNS_FOR_TOOLS = 500


class ReadRow(Protocol):
    """A row read by column name or by position: `sqlite3.Row`, `storage.pg.Record`."""

    def __getitem__(self, key: int | str, /) -> Any: ...


# One read: SQL with `?` placeholders and its parameters in, its rows out (a failure is
# `StorageUnavailable`).
Reader = Callable[[str, Sequence[Any]], Awaitable[Sequence[ReadRow]]]


@dataclass(frozen=True)
class Dialect:
    """What the staff queries spell differently per backend; everything else is shared."""

    # How the failures subquery reads `events` (SQLite must be told to use its partial index).
    failures_from: str
    # Joins whose order is the plan: SQLite's CROSS JOIN fixes it; PostgreSQL plans itself
    # and has no CROSS JOIN ... ON.
    join: str
    # `runs.status` with a user filter (SQLite's unary + keeps it on `runs_by_user`).
    status_with_user: str
    # SQLite's LIKE ignores ASCII case; PostgreSQL's ILIKE under the "C" collation does that.
    like: str
    explain: str
    plan_column: str
    # How the failure counts read `events` (`events_failure_kinds`, migration 18 / 12).
    kinds_from: str


SQLITE = Dialect(
    failures_from="events e INDEXED BY events_failures",
    join="CROSS JOIN",
    status_with_user="+r.status",
    like="LIKE",
    explain="EXPLAIN QUERY PLAN ",
    plan_column="detail",
    kinds_from="events INDEXED BY events_failure_kinds",
)
POSTGRES = Dialect(
    failures_from="events e",
    join="JOIN",
    status_with_user="r.status",
    like="ILIKE",
    explain="EXPLAIN ",
    plan_column="QUERY PLAN",
    kinds_from="events",
)


# The failure counts (`History.failure_counts`) in one statement over the partial index
# `events_failure_kinds` on (error_type, coalesce(tool, ''), at): the error types, then each
# type's tools, are found by skipping through the index (each `min(...) > previous` is one
# seek), and each pair's window is counted as one index range. No sort of the window's
# failures (a GROUP BY sorted 56,000 of them at 1M runs: 55 ms). A failure without a tool
# is '' there, so that both backends order and compare it alike.
_FAILURE_COUNTS = """
WITH RECURSIVE
  types(et) AS (
    SELECT min(error_type) FROM {kinds} WHERE error_type IS NOT NULL
    UNION ALL
    SELECT (SELECT min(error_type) FROM {kinds} WHERE error_type > types.et)
    FROM types WHERE types.et IS NOT NULL
  ),
  pairs(et, tl) AS (
    SELECT et, (SELECT min(coalesce(tool, '')) FROM {kinds} WHERE error_type = types.et)
    FROM types WHERE et IS NOT NULL
    UNION ALL
    SELECT et, (SELECT min(coalesce(tool, '')) FROM {kinds}
                WHERE error_type = pairs.et AND coalesce(tool, '') > pairs.tl)
    FROM pairs WHERE tl IS NOT NULL
  )
SELECT et, tl, (SELECT count(*) FROM {kinds}
                WHERE error_type = pairs.et AND coalesce(tool, '') = pairs.tl AND at >= ?)
FROM pairs WHERE tl IS NOT NULL
"""


@dataclass(frozen=True)
class RunFilter:
    """What staff narrowed the runs list to. Empty fields do not filter."""

    status: RunStatus | None = None
    user_id: int | None = None
    # An ErrorType value, or ANY_ERROR; matches runs with at least one failed attempt.
    error_type: str | None = None
    # With error_type: where that error happened. Alone: runs that planned this tool.
    tool: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    text: str | None = None
    run_id: str | None = None
    # Only runs with parts no tool serves (issue 13).
    unsupported: bool = False
    # Only runs that led to a handoff to a person (issue 14).
    handed_off: bool = False

    def effective(self, now: datetime | None = None) -> RunFilter:
        """The filter as queried: a text search without a start gets the default window."""
        if self.text and self.since is None:
            return replace(self, since=(now or utcnow()) - TEXT_SEARCH_WINDOW)
        return self


@dataclass(frozen=True)
class Cursor:
    """A position in the newest-first order: the (created_at, id) of a boundary run."""

    created_at: str
    run_id: str

    def encode(self) -> str:
        return f"{self.created_at}|{self.run_id}"

    @classmethod
    def decode(cls, value: str | None) -> Cursor | None:
        """None for a missing or malformed cursor (a hand-edited URL starts over)."""
        if not value:
            return None
        created, sep, run_id = value.partition("|")
        if not sep or not run_id or parse_ts_safe(created) is None:
            return None
        return cls(created, run_id)


@dataclass(frozen=True)
class RunsPage:
    items: list[RunSummary]
    older: Cursor | None  # pass as `before` for the next older page
    newer: Cursor | None  # pass as `after` for the next newer page


def _next_hour(instant: datetime) -> str:
    """The stored timestamp of the first whole hour after `instant` (its roll-up key is
    the first 13 characters)."""
    hour = instant.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return str(ts(hour + timedelta(hours=1)))


def parse_ts_safe(value: str) -> datetime | None:
    try:
        return parse_ts(value)
    except ValueError:
        return None


class History:
    """Read-only queries over runs, steps and events (`store.history`, either backend)."""

    def __init__(self, read: Reader, dialect: Dialect = SQLITE) -> None:
        self._read = read
        self._dialect = dialect

    # -- the bot's and the CLI's lists ------------------------------------------------------

    async def list_runs(
        self,
        *,
        user_id: int | None = None,
        chat_id: int | None = None,
        status: RunStatus | None = None,
        trace_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        before: str | None = None,
        offset: int = 0,
        limit: int = 20,
        unsupported: bool = False,
    ) -> RunPage:
        """Newest first, keyset-paged: `before` is the `next_cursor` of the previous page.

        `offset` is for small page numbers in chat (◀ ▶); deep paging should use `before`.
        """
        where: list[str] = ["1 = 1"]
        params: list[Any] = []
        for column, value in (
            ("user_id", user_id),
            ("chat_id", chat_id),
            ("status", status.value if status else None),
            ("trace_id", trace_id),
        ):
            if value is not None:
                where.append(f"r.{column} = ?")
                params.append(value)
        if since is not None:
            where.append("r.created_at >= ?")
            params.append(ts(since))
        if until is not None:
            where.append("r.created_at < ?")
            params.append(ts(until))
        if unsupported:  # runs_unsupported, a partial index: only the flagged runs
            where.append("r.unsupported = 1")
        if before:
            created, _, run_id = before.partition("|")
            where.append("(r.created_at, r.id) < (?, ?)")
            params.extend([created, run_id])
        limit = max(1, min(limit, 200))
        rows = await self._read(
            f"SELECT {SUMMARY_SELECT} FROM runs r WHERE {' AND '.join(where)}"
            " ORDER BY r.created_at DESC, r.id DESC LIMIT ? OFFSET ?",
            (*params, limit + 1, max(0, offset)),
        )
        items = [summary_from_row(r) for r in rows[:limit]]
        cursor = None
        if len(rows) > limit:
            last = rows[limit - 1]
            cursor = f"{last['created_at']}|{last['id']}"
        return RunPage(items=items, next_cursor=cursor)

    async def expired_staff_pauses(
        self, expires_before: datetime, *, after: str | None = None, limit: int = 100
    ) -> tuple[list[str], str | None]:
        """Staff approvals still waiting that were paused before `expires_before`: run ids,
        oldest first, a page of at most `limit`, and the cursor of the next page (None when
        this was the last); `after` is the previous page's cursor. Keyset-paged on the
        partial index `runs_staff_pauses`, so a sweep reaches every one however many wait."""
        where = ["status = 'paused'", "pause_approver = 'staff'", "paused_at < ?"]
        params: list[Any] = [ts(expires_before)]
        if after:
            paused_at, _, run_id = after.partition("|")
            where.append("(paused_at, id) > (?, ?)")
            params.extend([paused_at, run_id])
        limit = max(1, limit)
        rows = await self._read(
            f"SELECT id, paused_at FROM runs WHERE {' AND '.join(where)}"
            " ORDER BY paused_at, id LIMIT ?",
            (*params, limit + 1),
        )
        ids = [str(r[0]) for r in rows[:limit]]
        cursor = f"{rows[limit - 1][1]}|{rows[limit - 1][0]}" if len(rows) > limit else None
        return ids, cursor

    async def timeline(self, run_id: str) -> list[TimelineEntry]:
        """Every event of one run, in the order it was committed."""
        rows = await self._read(
            f"SELECT {columns(TIMELINE_COLUMNS)} FROM events WHERE run_id = ? ORDER BY seq",
            (run_id,),
        )
        return [timeline_entry_from_row(r) for r in rows]

    async def failure_counts(self, since: datetime) -> list[FailureCount]:
        """Failed attempts (retried, degraded or fatal) since `since`, by error type and tool.

        Counted from `events` through the partial index `events_failure_kinds` (error type,
        tool, time; failed attempts alone), exact whoever wrote or deleted the rows, with no
        roll-up to keep. Until migration 18 (SQLite; 12 on PostgreSQL) an hourly roll-up
        kept by a trigger on `events` served this, but any trigger there, with the foreign
        key on `events.run_id`, made SQLite open a statement journal for every event row
        written (~83 k instructions of a standard run that has no failure at all).

        One GROUP BY over the window's failures sorted them: 55 ms at 1M runs (56,000
        failures in the week). Instead one statement (`_FAILURE_COUNTS`) finds the few
        (error type, tool) pairs by skipping through the index and counts each pair's
        window as one index range: ~6 ms there. Still linear in the window's failures
        (index entries read), not bounded like `status_counts`.
        """
        rows = await self._read(_FAILURE_COUNTS.format(kinds=self._dialect.kinds_from), [ts(since)])
        counts = [
            FailureCount(error_type=r[0], tool=r[1] or None, count=int(r[2])) for r in rows if r[2]
        ]
        # Most first; a failure without a tool ('') before the tools of its type.
        counts.sort(key=lambda c: (-c.count, c.error_type, c.tool or ""))
        return counts

    async def explain_failure_counts(self, since: datetime) -> str:
        """The database's plan for `failure_counts`: lets tests prove it seeks and ranges
        through the partial index of failures, never reads the event log."""
        sql = _FAILURE_COUNTS.format(kinds=self._dialect.kinds_from)
        rows = await self._read(self._dialect.explain + sql, [ts(since)])
        return "\n".join(str(r[self._dialect.plan_column]) for r in rows)

    async def status_counts(self, since: datetime) -> dict[str, int]:
        """Runs created since `since`, by status.

        Whole hours come from the roll-up (`run_counts_hourly`, migration 10); the first,
        partial hour is counted from `runs` (an index range of at most an hour of runs).
        """
        start, next_hour = ts(since), _next_hour(since)
        rows = await self._read(
            "SELECT status, sum(n) AS n FROM ("
            " SELECT status, n FROM run_counts_hourly WHERE hour >= ?"
            " UNION ALL"
            " SELECT status, count(*) FROM runs WHERE created_at >= ? AND created_at < ?"
            " GROUP BY status"
            ") AS counted GROUP BY status HAVING sum(n) > 0",
            (next_hour[:13], start, next_hour),
        )
        return {str(r[0]): int(r[1]) for r in rows}

    async def schema_version(self) -> tuple[int, int]:
        """(the database's schema version, the version this stepwise knows): readiness
        wants them equal (a process older than the schema, or a schema not migrated)."""
        if self._dialect is POSTGRES:
            rows = await self._read("SELECT coalesce(max(version), 0) FROM schema_version", ())
            return int(rows[0][0]), len(PG_MIGRATIONS)
        rows = await self._read("PRAGMA user_version", ())
        return int(rows[0][0]), len(MIGRATIONS)

    async def pending_approvals(self) -> dict[str, tuple[int, datetime | None]]:
        """Paused steps waiting for a decision, by who decides ("customer", "staff"): how
        many, and when the oldest paused (for the metrics; one grouped read)."""
        rows = await self._read(
            "SELECT pause_approver, count(*) AS n, min(paused_at) AS oldest FROM runs"
            " WHERE status = 'paused' GROUP BY pause_approver",
            (),
        )
        waiting: dict[str, tuple[int, datetime | None]] = {}
        for row in rows:
            approver = str(row[0] or "customer")
            count, oldest = waiting.get(approver, (0, None))
            first = parse_ts(row[2])
            if oldest is None or (first is not None and first < oldest):
                oldest = first
            waiting[approver] = (count + int(row[1]), oldest)
        return waiting

    async def handoffs_per_day(self, since: datetime) -> list[HandoffDay]:
        """Handoffs to a person (issue 14) opened per UTC day since `since`, oldest first."""
        rows = await self._read(
            "SELECT substr(opened_at, 1, 10) AS day, count(*) AS n FROM handoffs"
            " WHERE opened_at >= ? GROUP BY substr(opened_at, 1, 10) ORDER BY day",
            (ts(since),),
        )
        return [HandoffDay(date.fromisoformat(str(r[0])), int(r[1])) for r in rows]

    async def median_first_reply_s(self, since: datetime) -> float | None:
        """The median time from a handoff's opening to the first staff message that reached
        the customer, over handoffs opened since `since` that got one (None: none did)."""
        rows = await self._read(
            "SELECT opened_at, first_staff_reply_at FROM handoffs"
            " WHERE opened_at >= ? AND first_staff_reply_at IS NOT NULL",
            (ts(since),),
        )
        waits = [_seconds_between(r[0], r[1]) for r in rows]
        return statistics.median(waits) if waits else None

    # -- the console's filtered pages ------------------------------------------------------

    async def search_runs(
        self,
        flt: RunFilter,
        *,
        before: Cursor | None = None,
        after: Cursor | None = None,
        limit: int = 25,
    ) -> RunsPage:
        """One page of runs matching `flt`, newest first.

        `before` pages towards older runs, `after` towards newer ones (exactly one of them,
        or neither for the newest page). Reads `limit + 1` rows to know whether more exist.
        """
        limit = max(1, min(limit, MAX_PAGE))
        source, terms, params = _where(flt.effective(), self._dialect)
        newer_first = after is None
        if before is not None:
            terms.append("(r.created_at, r.id) < (?, ?)")
            params.extend([before.created_at, before.run_id])
        elif after is not None:
            terms.append("(r.created_at, r.id) > (?, ?)")
            params.extend([after.created_at, after.run_id])
        order = "DESC" if newer_first else "ASC"
        where = " AND ".join(terms) or "1 = 1"
        page_sql = _page_sql(source, where, order, self._dialect)
        rows = list(await self._read(page_sql, [*params, limit + 1]))
        more = len(rows) > limit
        rows = rows[:limit]
        if not newer_first:
            rows.reverse()
        items = [summary_from_row(r) for r in rows]
        first = Cursor(rows[0]["created_at"], rows[0]["id"]) if rows else None
        last = Cursor(rows[-1]["created_at"], rows[-1]["id"]) if rows else None
        if newer_first:
            return RunsPage(items, older=last if more else None, newer=first if before else None)
        return RunsPage(items, older=last if rows else None, newer=first if more else None)

    async def iter_runs(self, flt: RunFilter) -> AsyncIterator[RunSummary]:
        """Every run matching `flt`, newest first, one keyset page at a time (for export)."""
        cursor: Cursor | None = None
        while True:
            page = await self.search_runs(flt, before=cursor, limit=MAX_PAGE)
            for item in page.items:
                yield item
            if page.older is None:
                return
            cursor = page.older

    async def recent_tools(self) -> list[str]:
        """Tool names of recent runs, for the filter's suggestions (bounded, not a scan)."""
        rows = await self._read(
            "SELECT DISTINCT s.tool FROM"
            " (SELECT id FROM runs ORDER BY created_at DESC, id DESC LIMIT ?) r"
            " JOIN steps s ON s.run_id = r.id ORDER BY s.tool",
            [_RECENT_RUNS_FOR_TOOLS],
        )
        return [str(r[0]) for r in rows]

    async def explain(self, flt: RunFilter, before: Cursor | None = None) -> str:
        """The database's plan for the page query: lets tests prove no filter scans the
        whole table."""
        source, terms, params = _where(flt.effective(), self._dialect)
        if before is not None:
            terms.append("(r.created_at, r.id) < (?, ?)")
            params.extend([before.created_at, before.run_id])
        where = " AND ".join(terms) or "1 = 1"
        dialect = self._dialect
        page_sql = _page_sql(source, where, "DESC", dialect)
        rows = await self._read(dialect.explain + page_sql, [*params, 26])
        return "\n".join(str(r[dialect.plan_column]) for r in rows)


@dataclass(frozen=True)
class HandoffDay:
    day: date
    opened: int


def _seconds_between(start: str, end: str) -> float:
    opened, replied = parse_ts(start), parse_ts(end)
    assert opened is not None and replied is not None
    return (replied - opened).total_seconds()


def _like_pattern(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _where(flt: RunFilter, dialect: Dialect = SQLITE) -> tuple[str, list[str], list[Any]]:
    """FROM clause, WHERE terms and their parameters for `flt` (already `effective`)."""
    source = "runs r"
    terms: list[str] = []
    params: list[Any] = []
    if flt.error_type:
        # Drive from the small partial index of failures; CROSS JOIN keeps that order.
        sub = ["e.error_type IS NOT NULL"]
        sub_params: list[Any] = []
        if flt.error_type != ANY_ERROR:
            sub.append("e.error_type = ?")
            sub_params.append(flt.error_type)
        if flt.tool:
            sub.append("e.tool = ?")
            sub_params.append(flt.tool)
        if flt.since is not None:
            # A run's events are never older than the run, so this bound is exact.
            sub.append("e.at >= ?")
            sub_params.append(ts(flt.since))
        source = (
            f"(SELECT DISTINCT e.run_id FROM {dialect.failures_from}"
            f" WHERE {' AND '.join(sub)}) f"
            f" {dialect.join} runs r ON r.id = f.run_id"
        )
        params.extend(sub_params)
    elif flt.tool:
        terms.append("EXISTS (SELECT 1 FROM steps s WHERE s.run_id = r.id AND s.tool = ?)")
        params.append(flt.tool)
    for column, value in (
        # A user's runs are few: with a user, the unary + keeps SQLite on runs_by_user.
        (
            dialect.status_with_user if flt.user_id is not None else "r.status",
            flt.status.value if flt.status else None,
        ),
        ("r.user_id", flt.user_id),
        ("r.id", flt.run_id),
    ):
        if value is not None:
            terms.append(f"{column} = ?")
            params.append(value)
    if flt.since is not None:
        terms.append("r.created_at >= ?")
        params.append(ts(flt.since))
    if flt.until is not None:
        terms.append("r.created_at < ?")
        params.append(ts(flt.until))
    if flt.unsupported:
        terms.append("r.unsupported = 1")
    if flt.handed_off:  # handoffs_by_run: a probe per run walked
        terms.append("EXISTS (SELECT 1 FROM handoffs h WHERE h.run_id = r.id)")
    if flt.text:
        terms.append(f"r.request_text {dialect.like} ? ESCAPE '\\'")
        params.append(_like_pattern(flt.text))
    return source, terms, params


def _page_sql(source: str, where: str, order: str, dialect: Dialect = SQLITE) -> str:
    """Pick the page by (created_at, id) first, then compute step counts for it alone.

    Computing the per-run columns only for the rows of the page matters when a filter
    matches thousands of runs that must be sorted (error types): the sort then carries
    keys, not summaries.
    """
    return (
        f"SELECT {SUMMARY_SELECT} FROM (SELECT r.id AS page_id FROM {source} WHERE {where}"
        f" ORDER BY r.created_at {order}, r.id {order} LIMIT ?) p"
        f" {dialect.join} runs r ON r.id = p.page_id ORDER BY r.created_at {order}, r.id {order}"
    )
