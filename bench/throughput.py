"""Sections 1–3: stepwise, LangGraph and the raw aiosqlite limit on the standard workload.

For each `synchronous` setting and each mode (sequential, N concurrent) the three systems
run in the same process, alternating: the runs are split into chunks and each chunk runs
every system once, in an order reversed from one chunk to the next, so drift (page cache,
CPU frequency, a noisy neighbour) hits all of them alike. Before the timed chunks, a short
calibration pass per system counts commits with sqlite3's trace callback (kept off while
timing, as it costs a little per statement).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from bench.measure import (
    CommitCounter,
    LatencySummary,
    MiB,
    drive,
    peak_rss_bytes,
    remove_db,
    reset_peak_rss,
    settle,
    written_bytes,
)
from bench.report import Report

SECTION = "throughput"
STEPWISE, LANGGRAPH, LIMIT = "stepwise", "langgraph", "aiosqlite-limit"


class Subject(Protocol):
    name: str
    runs: int
    counter: CommitCounter

    async def run_one(self, number: int) -> None: ...

    async def count_commits(self, on: bool) -> None: ...

    async def verify(self) -> None: ...

    async def size(self) -> int: ...

    async def close(self) -> None: ...


@dataclass
class Tally:
    subject: Subject
    next_number: int = 0
    timed_runs: int = 0
    wall_s: float = 0.0
    latencies: list[float] = field(default_factory=list)
    peak_rss: int = 0
    written: int = 0
    commits_per_run: float = 0.0
    transitions_per_run: float | None = None

    async def run(self, count: int, concurrency: int) -> None:
        settle()
        reset_peak_rss()
        before = written_bytes()
        timed = await drive(self.subject.run_one, self.next_number, count, concurrency)
        self.written += written_bytes() - before
        self.peak_rss = max(self.peak_rss, peak_rss_bytes())
        self.next_number += count
        self.timed_runs += count
        self.wall_s += timed.wall_s
        self.latencies.extend(timed.latencies_s)

    @property
    def runs_per_s(self) -> float:
        return self.timed_runs / self.wall_s if self.wall_s else 0.0


@dataclass(frozen=True)
class Plan:
    runs: int
    concurrency: int
    syncs: Sequence[str]
    chunks: int
    systems: Sequence[str]
    limit_commits: int  # used when stepwise is not measured to calibrate the limit
    workdir: Path


def mode_label(concurrency: int) -> str:
    return "sequential" if concurrency <= 1 else f"{concurrency}-concurrent"


async def run_throughput(report: Report, plan: Plan) -> None:
    for sync in plan.syncs:
        for concurrency in (1, plan.concurrency):
            await _one_configuration(report, plan, sync, concurrency)
    _ratios_and_goals(report, plan)


async def _open(name: str, path: Path, sync: str, commits_per_run: int) -> Subject:
    remove_db(path)
    if name == STEPWISE:
        from bench.workload import StepwiseSubject

        return await StepwiseSubject.open(path, sync)
    if name == LANGGRAPH:
        from bench.langgraph_flow import LangGraphSubject

        return await LangGraphSubject.open(path, sync)
    from bench.limit import LimitSubject

    return await LimitSubject.open(path, sync, commits_per_run)


async def _one_configuration(report: Report, plan: Plan, sync: str, concurrency: int) -> None:
    mode = mode_label(concurrency)
    calibration = max(20, min(200, plan.runs // 10))
    tallies: dict[str, Tally] = {}
    transitions = plan.limit_commits
    # Calibrate in a fixed order: stepwise first, its transitions per run size the limit.
    for name in (STEPWISE, LANGGRAPH, LIMIT):
        if name not in plan.systems:
            continue
        path = plan.workdir / f"{name}-{sync.lower()}-{mode}.db"
        subject = await _open(name, path, sync, transitions)
        tally = tallies[name] = Tally(subject)
        await subject.count_commits(True)
        counted = await drive(subject.run_one, 0, calibration, concurrency)
        await subject.count_commits(False)
        tally.next_number = calibration
        if name == LIMIT:
            tally.commits_per_run = float(transitions)
        else:
            tally.commits_per_run = subject.counter.commits / len(counted.latencies_s)
        if name == STEPWISE:
            from bench.workload import StepwiseSubject

            assert isinstance(subject, StepwiseSubject)
            tally.transitions_per_run = await subject.transitions() / calibration
            transitions = round(tally.transitions_per_run)

    names = [n for n in (STEPWISE, LANGGRAPH, LIMIT) if n in tallies]
    base, rest = divmod(plan.runs, plan.chunks)
    for chunk in range(plan.chunks):
        count = base + (1 if chunk < rest else 0)
        order = names if chunk % 2 == 0 else list(reversed(names))
        for name in order:
            await tallies[name].run(count, concurrency)

    for name in names:
        tally = tallies[name]
        await tally.subject.verify()
        size = await tally.subject.size()
        await tally.subject.close()
        labels = {"system": name, "sync": sync, "mode": mode}
        lat = LatencySummary.of(tally.latencies)
        report.add(SECTION, "runs/s", tally.runs_per_s, "", labels, runs=tally.timed_runs)
        report.add(SECTION, "mean", lat.mean_ms, "ms", labels)
        report.add(SECTION, "p50", lat.p50_ms, "ms", labels)
        report.add(SECTION, "p95", lat.p95_ms, "ms", labels)
        report.add(SECTION, "commits/run", tally.commits_per_run, "", labels)
        if tally.transitions_per_run is not None:
            report.add(SECTION, "transitions/run", tally.transitions_per_run, "", labels)
        report.add(
            SECTION,
            "bytes/run",
            size / tally.subject.runs,
            "B",
            labels,
            db_bytes=size,
            runs_in_file=tally.subject.runs,
        )
        report.add(SECTION, "written/run", tally.written / tally.timed_runs / 1024, "KiB", labels)
        report.add(SECTION, "peak RSS", tally.peak_rss / MiB, "MiB", labels)


def _ratios_and_goals(report: Report, plan: Plan) -> None:
    for sync in plan.syncs:
        for concurrency in (1, plan.concurrency):
            mode = mode_label(concurrency)
            ours = report.value(SECTION, "runs/s", system=STEPWISE, sync=sync, mode=mode)
            theirs = report.value(SECTION, "runs/s", system=LANGGRAPH, sync=sync, mode=mode)
            limit = report.value(SECTION, "runs/s", system=LIMIT, sync=sync, mode=mode)
            labels = {"sync": sync, "mode": mode}
            if ours and theirs:
                ratio = ours / theirs
                report.add("ratios", "stepwise/langgraph", ratio, "x", labels)
                report.goal(
                    f"executor vs LangGraph, {sync}, {mode}",
                    ">= 4.0x",
                    f"{ratio:.2f}x ({ours:.0f} vs {theirs:.0f} runs/s)",
                    ratio >= 4.0,
                )
            if ours and limit:
                ratio = ours / limit
                report.add("ratios", "stepwise/limit", ratio, "x", labels)
                if concurrency <= 1:
                    report.goal(
                        f"executor vs raw aiosqlite limit, {sync}, sequential",
                        ">= 70%",
                        f"{ratio:.0%} ({ours:.0f} vs {limit:.0f} runs/s)",
                        ratio >= 0.70,
                    )
                else:
                    report.goal(
                        f"executor vs one-commit-per-transition limit, {sync}, {mode}",
                        "> 100%",
                        f"{ratio:.0%} ({ours:.0f} vs {limit:.0f} runs/s)",
                        ratio > 1.0,
                    )
