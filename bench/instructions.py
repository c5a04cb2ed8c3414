"""Instructions per standard run, counted by valgrind's callgrind: a figure that does not move.

Wall-clock figures on a shared two-core machine drift by 10 % from one minute to the next;
the number of instructions a run executes does not (the same Python, the same code, the
same hash seed: `PYTHONHASHSEED=0`). So a change that makes the standard run dearer (the
declared tool catalog did: 5.80 M → 6.43 M) shows here as a difference of a few percent
that a timed benchmark would lose in its noise.

    python -m bench.instructions              # runs 50 and 250, prints the per-run figure
    python -m bench.instructions --small 20 --large 120
    python -m bench.instructions --concurrency 50   # 50 runs at a time, threads apart

Each count runs the bench's stepwise subject (`bench.workload.StepwiseSubject`: the real
`Agent`, `Executor` and `SqliteRunStore`, the standard workload of 3 steps, a pause, a
confirmation, all durable, `synchronous=NORMAL`) sequentially in a fresh process under
`valgrind --tool=callgrind`. Start-up (imports, opening the database) costs the same in both
processes, so `(total(large) − total(small)) / (large − small)` is the cost of one run,
including aiosqlite's worker thread and SQLite itself (callgrind counts every thread;
the kernel's work in system calls is not counted).

`--concurrency N` plays the same runs N at a time, as the side-by-side bench's concurrent
mode does (`bench.measure.drive`: N workers sharing the run numbers), so the concurrent
machinery (more loop turns a hop to the database thread, group commits, waiters) is in the
count too; callgrind then counts each thread apart (`--separate-threads=yes`) and the figure
per run is also printed for the main thread (the event loop) and the other threads
(aiosqlite's worker and SQLite). Under valgrind the threads run one at a time, so what is
counted is the work done, not the waiting.

Prints one JSON line per figure, like `python -m bench`, and the goal (≤ 5.50 M, issue 24
item 4; it was ≤ 5.80 M, the cost before the catalog, until bench/README.md §9's fourth
pass). Needs valgrind; takes about a minute per thousand runs counted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

SECTION = "instructions"
# Issue 24 item 4; 5.80 M (the cost before the declared catalog) until the fourth pass.
GOAL_PER_RUN = 5_500_000
_TOTALS = re.compile(r"^(?:summary|totals):\s*(\d+)", re.MULTILINE)


async def _play(runs: int, workdir: Path, concurrency: int = 1) -> None:
    """The child: `runs` standard runs, `concurrency` at a time, each checked (a wrong end raises)."""
    from bench.measure import drive
    from bench.workload import StepwiseSubject

    subject = await StepwiseSubject.open(workdir / "instructions.db", "NORMAL")
    try:
        if concurrency <= 1:
            for number in range(runs):
                await subject.run_one(number)
        else:
            await drive(subject.run_one, 0, runs, concurrency)
        await subject.verify()
    finally:
        await subject.close()


def _total(out: Path) -> int:
    found = _TOTALS.search(out.read_text(encoding="utf-8", errors="replace"))
    if found is None:
        raise RuntimeError(f"no instruction total in {out}")
    return int(found.group(1))


def count_threads(
    runs: int, workdir: Path, concurrency: int = 1, apart: bool = False
) -> dict[str, int]:
    """Instructions of one fresh process playing `runs` standard runs, `concurrency` at a time.

    Sequential (the default figure): `{"total": n}`, one callgrind file for every thread.
    Concurrent (or `apart`): callgrind counts each thread in its own file (`<out>-01` is the
    main thread, the one running the event loop), and the result has `main` and `other`
    besides `total`.
    """
    apart = apart or concurrency > 1
    label = f"{runs}" if not apart else f"{runs}.c{concurrency}"
    out = workdir / f"callgrind.{label}.out"
    db_dir = workdir / f"db-{label}"
    # A fresh database and no callgrind files of an earlier count in a reused --workdir
    # (a database already migrated and holding runs counts less, not the same).
    shutil.rmtree(db_dir, ignore_errors=True)
    for stale in workdir.glob(f"{out.name}*"):
        stale.unlink()
    db_dir.mkdir(parents=True)
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        *(["--separate-threads=yes"] if apart else []),
        sys.executable,
        "-m",
        "bench.instructions",
        "--child",
        str(runs),
        "--workdir",
        str(db_dir),
        "--concurrency",
        str(concurrency),
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"callgrind run of {runs} failed:\n{done.stderr[-2000:]}")
    if not apart:
        return {"total": _total(out)}
    threads = sorted(workdir.glob(f"{out.name}-*"))
    if not threads or threads[0].name != f"{out.name}-01":
        raise RuntimeError(f"no per-thread callgrind files beside {out}")
    totals = [_total(thread) for thread in threads]
    return {"total": sum(totals), "main": totals[0], "other": sum(totals[1:])}


def count(runs: int, workdir: Path) -> int:
    """Instructions of one fresh process playing `runs` standard runs, sequentially."""
    return count_threads(runs, workdir)["total"]


def warm(workdir: Path) -> None:
    """One run outside valgrind first, so both counts find the same bytecode cache.

    Otherwise the first count compiles (and writes) every module changed since the last
    import and the second only loads it: ~25 M instructions of parsing in the small count
    alone, which the difference turns into a gain of ~0.1 M a run that is not there.
    """
    db_dir = workdir / "db-warm"
    shutil.rmtree(db_dir, ignore_errors=True)
    db_dir.mkdir(parents=True)
    command = [sys.executable, "-m", "bench.instructions", "--child", "1", "--workdir", str(db_dir)]
    subprocess.run(command, capture_output=True, check=True)


def per_run(
    small: int, large: int, workdir: Path, concurrency: int = 1, apart: bool = False
) -> dict[str, int]:
    """Each count's totals, and the cost of one run (`per_run`; by thread when apart)."""
    warm(workdir)
    totals = {n: count_threads(n, workdir, concurrency, apart) for n in (small, large)}
    figures = {"small": totals[small]["total"], "large": totals[large]["total"]}
    for part in totals[small]:
        key = "per_run" if part == "total" else f"per_run_{part}"
        figures[key] = round((totals[large][part] - totals[small][part]) / (large - small))
    return figures


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.instructions", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--small", type=int, default=50, help="runs in the first count (50)")
    parser.add_argument("--large", type=int, default=250, help="runs in the second count (250)")
    parser.add_argument("--workdir", type=Path, help="where the database and callgrind files go")
    parser.add_argument("--keep", action="store_true", help="keep the callgrind output files")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=1,
        help="runs played at a time (1: sequential, the default figure)",
    )
    parser.add_argument(
        "--threads",
        action="store_true",
        help="count the main thread and the others apart (always so when concurrent)",
    )
    parser.add_argument("--child", type=int, metavar="RUNS", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is None and not 0 < args.small < args.large:
        parser.error("--small must be positive and below --large")
    if args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(argv)
    if args.child is not None:
        asyncio.run(_play(args.child, args.workdir, args.concurrency))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: no instruction counts", file=sys.stderr)
        return 2
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="stepwise-instructions-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        figures = per_run(args.small, args.large, workdir, args.concurrency, args.threads)
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    mode = "sequential" if args.concurrency <= 1 else f"{args.concurrency}-concurrent"
    labels = {"system": "stepwise", "workload": "standard", "mode": mode}
    for metric, runs in (("total", args.small), ("total", args.large)):
        key = "small" if runs == args.small else "large"
        line = {"section": SECTION, **labels, "runs": runs, "metric": metric}
        print(json.dumps({**line, "value": figures[key], "unit": "instructions"}), flush=True)
    value = figures["per_run"]
    print(
        json.dumps(
            {"section": SECTION, **labels, "metric": "per_run", "value": value, "unit": "instr"}
        )
    )
    for thread in ("main", "other"):
        if f"per_run_{thread}" in figures:
            line = {"section": SECTION, **labels, "thread": thread, "metric": "per_run"}
            print(json.dumps({**line, "value": figures[f"per_run_{thread}"], "unit": "instr"}))
    if args.concurrency > 1:
        return 0  # the goal is the sequential run's
    print(
        json.dumps(
            {
                "goal": "instructions per standard run",
                "target": f"<= {GOAL_PER_RUN / 1e6:.2f} M",
                "measured": f"{value / 1e6:.2f} M",
                "result": "PASS" if value <= GOAL_PER_RUN else "MISS",
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
