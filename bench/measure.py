"""Small measuring tools: memory, percentiles, commit counting, file sizes, run drivers."""

from __future__ import annotations

import asyncio
import gc
import math
import os
import resource
import sqlite3
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiosqlite

MiB = 1024 * 1024


# -- memory ---------------------------------------------------------------------------------


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def rss_bytes() -> int:
    """Resident set size now (VmRSS); call `settle()` first.

    Off Linux (no /proc) this falls back to the peak RSS, which only ever grows.
    """
    kib = _status_kib("VmRSS")
    if kib is not None:
        return kib * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def reset_peak_rss() -> bool:
    """Reset the kernel's high-water mark (VmHWM) so the next peak is this phase's own."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")
    except OSError:
        return False
    return True


def peak_rss_bytes() -> int:
    kib = _status_kib("VmHWM")
    if kib is not None:
        return kib * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def written_bytes() -> int:
    """Bytes this process has handed to write(2) so far (/proc/self/io wchar), or 0."""
    try:
        with open("/proc/self/io", encoding="ascii") as io:
            for line in io:
                if line.startswith("wchar:"):
                    return int(line.split()[1])
    except OSError:
        return 0
    return 0


def settle() -> None:
    """Collect garbage (all generations) before a memory reading or a timed phase."""
    gc.collect()
    gc.collect()


# -- statistics ------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sample."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class LatencySummary:
    count: int
    mean_ms: float
    p50_ms: float
    p95_ms: float
    max_ms: float

    @classmethod
    def of(cls, seconds: Sequence[float]) -> LatencySummary:
        ms = [s * 1000 for s in seconds]
        return cls(
            count=len(ms),
            mean_ms=statistics.fmean(ms) if ms else math.nan,
            p50_ms=percentile(ms, 50),
            p95_ms=percentile(ms, 95),
            max_ms=max(ms) if ms else math.nan,
        )


# -- SQLite ----------------------------------------------------------------------------------


class CommitCounter:
    """Counts COMMIT statements on aiosqlite connections via sqlite3's trace callback.

    The callback runs on aiosqlite's worker thread for every statement, so it costs a little;
    callers switch it on only for a calibration pass, not for the timed runs.
    """

    def __init__(self) -> None:
        self.commits = 0
        self.statements = 0
        self._attached: list[aiosqlite.Connection] = []

    def _trace(self, sql: str) -> None:
        self.statements += 1
        if sql.lstrip()[:6].upper() == "COMMIT":
            self.commits += 1

    async def attach(self, *connections: aiosqlite.Connection) -> None:
        for conn in connections:
            await conn.set_trace_callback(self._trace)
            self._attached.append(conn)

    async def detach(self) -> None:
        for conn in self._attached:
            await conn.set_trace_callback(None)  # type: ignore[arg-type]  # None removes it
        self._attached.clear()


def connections_of(obj: object) -> list[aiosqlite.Connection]:
    """The aiosqlite connections an object holds (e.g. SqliteRunStore._conn), found by type.

    Looking them up by type keeps the bench working whichever attribute names storage uses.
    """
    found = []
    for value in vars(obj).values():
        if isinstance(value, aiosqlite.Connection):
            found.append(value)
    return found


def db_files(path: Path) -> Iterator[Path]:
    for suffix in ("", "-wal", "-shm"):
        candidate = Path(f"{path}{suffix}")
        if candidate.exists():
            yield candidate


def db_bytes(path: Path) -> int:
    """Main file plus WAL (the -shm index is a cache and is not counted)."""
    return sum(p.stat().st_size for p in db_files(path) if not str(p).endswith("-shm"))


async def checkpoint(conn: aiosqlite.Connection) -> None:
    """Fold the WAL into the main file so its size is the data's size."""
    await conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def remove_db(path: Path) -> None:
    for file in db_files(path):
        file.unlink()


def query(path: Path, sql: str, *params: object) -> list[tuple[Any, ...]]:
    """Read the database file with a short-lived connection of its own (WAL: a consistent
    snapshot of what is committed), so checks never depend on the store's internals."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def sqlite_version() -> str:
    return sqlite3.sqlite_version


# -- drivers ---------------------------------------------------------------------------------


RunOne = Callable[[int], Awaitable[None]]


@dataclass(frozen=True)
class Timed:
    wall_s: float
    latencies_s: list[float]


async def drive(run_one: RunOne, first: int, count: int, concurrency: int) -> Timed:
    """Run `count` runs numbered from `first`, `concurrency` at a time; time each one."""
    latencies: list[float] = []
    numbers = iter(range(first, first + count))

    async def worker() -> None:
        for number in numbers:  # shared iterator: each number is taken by exactly one worker
            started = time.perf_counter()
            await run_one(number)
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    if concurrency <= 1:
        await worker()
    else:
        async with asyncio.TaskGroup() as group:
            for _ in range(min(concurrency, count)):
                group.create_task(worker())
    return Timed(time.perf_counter() - started, latencies)


def machine() -> dict[str, str]:
    """What the figures were measured on."""
    import platform

    cpu = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": str(os.cpu_count() or 0),
        "python": platform.python_version(),
        "sqlite": sqlite_version(),
        "aiosqlite": _version("aiosqlite"),
        "langgraph": _version("langgraph"),
        "langgraph-checkpoint-sqlite": _version("langgraph-checkpoint-sqlite"),
        "platform": platform.platform(),
    }


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "absent"
