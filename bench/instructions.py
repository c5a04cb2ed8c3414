"""Instructions per standard run, counted by valgrind's callgrind: a figure that does not move.

Wall-clock figures on a shared two-core machine drift by 10 % from one minute to the next;
the number of instructions a run executes does not (the same Python, the same code, the
same hash seed: `PYTHONHASHSEED=0`). So a change that makes the standard run dearer (the
declared tool catalog did: 5.80 M → 6.43 M) shows here as a difference of a few percent
that a timed benchmark would lose in its noise.

    python -m bench.instructions              # runs 50 and 250, prints the per-run figure
    python -m bench.instructions --small 20 --large 120

Each count runs the bench's stepwise subject (`bench.workload.StepwiseSubject`: the real
`Agent`, `Executor` and `SqliteRunStore`, the standard workload of 3 steps, a pause, a
confirmation, all durable, `synchronous=NORMAL`) sequentially in a fresh process under
`valgrind --tool=callgrind`. Start-up (imports, opening the database) costs the same in both
processes, so `(total(large) − total(small)) / (large − small)` is the cost of one run,
including aiosqlite's worker thread and SQLite itself (callgrind counts every thread;
the kernel's work in system calls is not counted).

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


async def _play(runs: int, workdir: Path) -> None:
    """The child: `runs` standard runs, sequential, each checked (a wrong end raises)."""
    from bench.workload import StepwiseSubject

    subject = await StepwiseSubject.open(workdir / "instructions.db", "NORMAL")
    try:
        for number in range(runs):
            await subject.run_one(number)
        await subject.verify()
    finally:
        await subject.close()


def count(runs: int, workdir: Path) -> int:
    """Instructions of one fresh process playing `runs` standard runs."""
    out = workdir / f"callgrind.{runs}.out"
    db_dir = workdir / f"db-{runs}"
    db_dir.mkdir(parents=True, exist_ok=True)
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        sys.executable,
        "-m",
        "bench.instructions",
        "--child",
        str(runs),
        "--workdir",
        str(db_dir),
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"callgrind run of {runs} failed:\n{done.stderr[-2000:]}")
    found = _TOTALS.search(out.read_text(encoding="utf-8", errors="replace"))
    if found is None:
        raise RuntimeError(f"no instruction total in {out}")
    return int(found.group(1))


def per_run(small: int, large: int, workdir: Path) -> dict[str, int]:
    totals = {n: count(n, workdir) for n in (small, large)}
    return {
        "small": totals[small],
        "large": totals[large],
        "per_run": round((totals[large] - totals[small]) / (large - small)),
    }


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.instructions", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--small", type=int, default=50, help="runs in the first count (50)")
    parser.add_argument("--large", type=int, default=250, help="runs in the second count (250)")
    parser.add_argument("--workdir", type=Path, help="where the database and callgrind files go")
    parser.add_argument("--keep", action="store_true", help="keep the callgrind output files")
    parser.add_argument("--child", type=int, metavar="RUNS", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is None and not 0 < args.small < args.large:
        parser.error("--small must be positive and below --large")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(argv)
    if args.child is not None:
        asyncio.run(_play(args.child, args.workdir))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: no instruction counts", file=sys.stderr)
        return 2
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="stepwise-instructions-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        figures = per_run(args.small, args.large, workdir)
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    labels = {"system": "stepwise", "workload": "standard", "mode": "sequential"}
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
