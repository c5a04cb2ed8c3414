"""`python -m bench`: run the benchmark sections, one JSON line per figure, a table at the end.

    python -m bench                       # everything, full size (a few minutes)
    python -m bench --quick               # small sizes, under a minute (smoke test)
    python -m bench --only executor,langgraph --runs 5000
    python -m bench --only bot --bot-customers 100
    python -m bench --profile bench-profile   # also write pyinstrument reports

Goals are reported PASS or MISS; a miss never changes the exit status. The exit status is
non-zero only when the benchmark itself breaks (a run ends wrongly, a section crashes).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from bench.measure import machine
from bench.report import Report

SECTIONS = ("executor", "langgraph", "limit", "paused", "bot", "staff", "pg", "failover", "soak")
THROUGHPUT = {"executor": "stepwise", "langgraph": "langgraph", "limit": "aiosqlite-limit"}


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke test < 60 s")
    parser.add_argument(
        "--only",
        default=",".join(SECTIONS),
        help=f"comma-separated sections to run, from: {', '.join(SECTIONS)} (default: all)",
    )
    parser.add_argument("--runs", type=int, help="runs per system and configuration (2000)")
    parser.add_argument("--concurrency", type=int, default=50, help="concurrent runs (50)")
    parser.add_argument(
        "--sync", default="FULL,NORMAL", help="PRAGMA synchronous settings to compare"
    )
    parser.add_argument("--chunks", type=int, help="alternation chunks per configuration (10)")
    parser.add_argument("--paused", type=int, help="runs to pause for the memory figure (10000)")
    parser.add_argument("--bot-customers", type=int, help="customers arriving at once (200)")
    parser.add_argument("--bot-paced", type=int, help="customers in the paced scenario (200)")
    parser.add_argument("--bot-rate", type=float, default=4.0, help="paced arrivals per second (4)")
    parser.add_argument(
        "--staff-runs",
        help="stored runs for staff queries, comma-separated sizes (10000,100000,1000000)",
    )
    parser.add_argument("--staff-samples", type=int, help="timed calls per staff query (200)")
    parser.add_argument("--pg-runs", type=int, help="runs per system and mode on PostgreSQL (1000)")
    parser.add_argument("--kills", type=int, help="SIGKILLs of the poller per placement (20)")
    parser.add_argument("--soak-chats", type=int, help="customers in the crash soak (20)")
    parser.add_argument("--soak-kills", type=int, help="SIGKILLs of replicas per soak (20)")
    parser.add_argument(
        "--soak-shop-latency-ms",
        type=int,
        default=2000,
        help="how long the soak's shop takes to answer each call (2000)",
    )
    parser.add_argument("--workdir", type=Path, help="where database files go (a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the database files")
    parser.add_argument(
        "--profile", type=Path, metavar="DIR", help="also write pyinstrument reports to DIR"
    )
    args = parser.parse_args(argv)
    sizes = {
        "runs": (2000, 200),
        "chunks": (10, 4),
        "paused": (10_000, 1_000),
        "bot_customers": (200, 30),
        "bot_paced": (200, 16),
        "staff_runs": ("10000,100000,1000000", "10000"),
        "staff_samples": (200, 50),
        "pg_runs": (1000, 100),
        "kills": (20, 3),
        "soak_chats": (20, 5),
        "soak_kills": (20, 5),
    }
    for name, (full, quick) in sizes.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    args.sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(args.sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown section(s): {', '.join(sorted(unknown))}")
    args.syncs = [s.strip().upper() for s in args.sync.split(",") if s.strip()]
    if not set(args.syncs) <= {"FULL", "NORMAL"}:
        parser.error("--sync takes FULL and/or NORMAL")
    return args


async def _main(args: argparse.Namespace, report: Report, workdir: Path) -> None:
    systems = [THROUGHPUT[s] for s in args.sections if s in THROUGHPUT]
    if systems:
        from bench.throughput import Plan, run_throughput

        plan = Plan(
            runs=args.runs,
            concurrency=args.concurrency,
            syncs=args.syncs,
            chunks=max(1, args.chunks),
            systems=systems,
            limit_commits=11,
            workdir=workdir,
        )
        await run_throughput(report, plan)
    if "paused" in args.sections:
        from bench.paused import run_paused

        warmup = max(1000, args.paused // 5)  # fills SQLite's bounded page cache
        await run_paused(report, workdir, args.paused, warmup, args.concurrency)
    if "bot" in args.sections:
        from bench.bot_path import run_bot

        await run_bot(report, workdir, args.bot_customers, args.bot_paced, args.bot_rate)
    if "staff" in args.sections:
        from bench.pg_throughput import server_url
        from bench.staff import run_staff

        sizes = [int(n) for n in str(args.staff_runs).split(",") if n.strip()]
        pg_url = server_url() if _answers(server_url()) else None
        if pg_url is None:
            report.note("staff: no PostgreSQL answers; SQLite only")
        await run_staff(report, workdir, sizes, args.staff_samples, pg_url)
    if "pg" in args.sections:
        from bench.pg_throughput import PgPlan, run_pg

        await run_pg(
            report, PgPlan(runs=args.pg_runs, concurrency=args.concurrency, chunks=args.chunks)
        )
    if "failover" in args.sections:
        from bench.failover import run_failover

        await run_failover(report, workdir, args.kills)
    if "soak" in args.sections:
        from bench.soak import run_soak

        await run_soak(
            report, workdir, args.soak_chats, args.soak_kills, args.soak_shop_latency_ms / 1000
        )
    if args.profile is not None:
        from bench.profiling import profile

        for sync in args.syncs:
            written = await profile(
                args.profile, workdir, min(args.runs, 500), args.concurrency, sync
            )
            report.note(f"profiles ({sync}): " + ", ".join(str(p) for p in written[::2]))


def _answers(url: str) -> bool:
    import psycopg

    try:
        psycopg.connect(url, connect_timeout=3).close()
    except psycopg.Error:
        return False
    return True


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    report = Report()
    info = machine()
    started_at = datetime.now(UTC)
    report.note(
        f"stepwise bench {started_at:%Y-%m-%d %H:%M} UTC on {info['cpu']}, {info['cores']} cores,"
        f" Python {info['python']}, SQLite {info['sqlite']}, aiosqlite {info['aiosqlite']},"
        f" langgraph {info['langgraph']}, langgraph-checkpoint-sqlite"
        f" {info['langgraph-checkpoint-sqlite']}; {'quick' if args.quick else 'full'} mode,"
        f" runs={args.runs}, concurrency={args.concurrency};"
        f" load average {_load()} (other processes on this machine skew the figures)"
    )
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="stepwise-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        asyncio.run(_main(args, report, workdir))
    finally:
        report.note(f"total {time.perf_counter() - started:.1f} s; load average now {_load()}")
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
        print("\n" + report.table(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
