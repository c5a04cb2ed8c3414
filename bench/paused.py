"""Section 4: a paused run lives in the database, not in memory.

Pause many runs (ask → two steps → pause before `cancel_order`) and compare the resident
set size before and after, each time after a full garbage collection. A warm-up of the
same work first fills what legitimately stays (imports, pydantic's validators, SQLite's
page cache, which is bounded by `cache_size`), so the delta is what paused runs retain.
"""

from __future__ import annotations

import asyncio
import gc
import time
from pathlib import Path

from bench.measure import MiB, query, remove_db, rss_bytes, settle
from bench.report import Report
from bench.workload import StepwiseSubject

SECTION = "paused"
GOAL_BYTES = 5 * MiB


async def _pause_many(subject: StepwiseSubject, first: int, count: int, concurrency: int) -> None:
    """Like bench.measure.drive, but keeps nothing per run (no latency list)."""
    numbers = iter(range(first, first + count))

    async def worker() -> None:
        for number in numbers:
            await subject.pause_one(number)

    async with asyncio.TaskGroup() as group:
        for _ in range(concurrency):
            group.create_task(worker())


async def run_paused(
    report: Report, workdir: Path, count: int, warmup: int, concurrency: int
) -> None:
    path = workdir / "paused.db"
    remove_db(path)
    # Memory does not depend on fsync; NORMAL keeps this section short.
    subject = await StepwiseSubject.open(path, "NORMAL")
    try:
        await _pause_many(subject, 0, warmup, concurrency)
        settle()
        before, objects_before = rss_bytes(), len(gc.get_objects())
        started = time.perf_counter()
        await _pause_many(subject, warmup, count, concurrency)
        elapsed = time.perf_counter() - started
        settle()
        after, objects_after = rss_bytes(), len(gc.get_objects())
        rows = query(
            path, "SELECT count(*) FROM runs WHERE status = 'paused' AND pause_nonce IS NOT NULL"
        )
        paused = int(rows[0][0])
        if paused != warmup + count:
            raise AssertionError(f"{paused} paused runs in the database, expected {warmup + count}")
    finally:
        await subject.close()
    delta = after - before
    labels = {"runs": str(count), "warm-up": str(warmup), "concurrency": str(concurrency)}
    report.add(SECTION, "RSS before", before / MiB, "MiB", labels)
    report.add(SECTION, "RSS after", after / MiB, "MiB", labels)
    report.add(SECTION, "RSS delta", delta / MiB, "MiB", labels)
    report.add(SECTION, "delta/run", delta / count, "B", labels)
    report.add(SECTION, "gc objects delta", objects_after - objects_before, "", labels)
    report.add(SECTION, "pauses/s", count / elapsed, "", labels)
    report.goal(
        f"{count:,} paused runs: RSS growth",
        "< 5 MiB",
        f"{delta / MiB:.2f} MiB ({delta / count:.0f} B/run)",
        delta < GOAL_BYTES,
    )
