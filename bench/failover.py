"""Section 7: failover — how long nobody polls Telegram after the poller is SIGKILLed.

Two real `stepwise serve` processes (python -m stepwise serve) on one SQLite file long-poll
an in-process `StandIn`: one holds the `poller` lease, the other waits as a hot standby
(`bot/polling.py`). Each round SIGKILLs the holder and measures the takeover time: from the
kill to the first `getUpdates` the stand-in receives afterwards (only the standby can send
it: the killed process is gone). The killed process is then started again and becomes the
standby (its "poller: waiting" line is awaited), and the next round kills the new holder.

Two placements:

* `same machine`: the processes share a pid namespace; the standby sees at once that the
  holder's pid is gone and takes its lease without waiting for it to expire.
* `other machine`: each process runs in a pid namespace of its own (`unshare --pid`, needs
  root; left out with a note otherwise), so neither can judge the other's pid, exactly as
  across machines: the standby takes over only once the lease (`STEPWISE_LEASE`, 3 s) has
  run out, trying every third of it.

Figures: takeover p50 and max, and `Conflict` lines in the processes' logs (two pollers at
once; must be 0). Afterwards a customer message is answered by the last holder (a check
that polling really resumed, not a figure).
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from bench.measure import LatencySummary, remove_db
from bench.report import Report
from standin import DEFAULT_TOKEN, StandIn

SECTION = "failover"
LEASE_S = 3.0
START_TIMEOUT_S = 60.0
POLL_S = 0.005


@dataclass
class Serve:
    """One `stepwise serve` process and its log."""

    argv: Sequence[str]
    env: dict[str, str]
    log: Path
    proc: asyncio.subprocess.Process | None = None
    waits_seen: int = 0
    starts: list[float] = field(default_factory=list)

    async def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = await asyncio.create_subprocess_exec(
                *self.argv, env=self.env, stdout=out, stderr=subprocess.STDOUT
            )
        self.starts.append(time.time())

    def waiting(self) -> int:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return text.count("poller: waiting")

    async def kill(self) -> float:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        killed = time.time()
        await self.proc.wait()
        return killed

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGKILL)
            await self.proc.wait()


async def _until(condition: Callable[[], bool], what: str, within: float = START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"failover bench: {what} not reached within {within:g} s")
        await asyncio.sleep(POLL_S)


def _more_waits(serve: Serve, before: int) -> bool:
    return serve.waiting() > before


def _can_isolate() -> str | None:
    """Why pid namespaces cannot be used here (None: they can)."""
    if shutil.which("unshare") is None:
        return "unshare not found"
    if os.geteuid() != 0:
        return "unshare --pid needs root"
    done = subprocess.run(
        ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "true"],
        capture_output=True,
        check=False,
        timeout=10,
    )
    return None if done.returncode == 0 else done.stderr.decode(errors="replace").strip()


def _argv(isolated: bool) -> list[str]:
    serve = [sys.executable, "-m", "stepwise", "serve"]
    if isolated:
        return ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", *serve]
    return serve


async def measure(workdir: Path, kills: int, *, isolated: bool) -> tuple[list[float], int]:
    """Takeover seconds per kill, and the `Conflict` lines logged."""
    db = workdir / f"failover-{'other' if isolated else 'same'}.db"
    remove_db(db)
    async with StandIn() as standin:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))}
        env.update(
            {
                "TELEGRAM_BOT_TOKEN": DEFAULT_TOKEN,
                "TELEGRAM_API_BASE_URL": standin.base_url,
                "STEPWISE_DB": str(db),
                "STEPWISE_LEASE": f"{LEASE_S:g}",
                "PYTHONUNBUFFERED": "1",
            }
        )
        serves = [
            Serve(_argv(isolated), env, workdir / f"failover-{n}-{isolated}.log") for n in (0, 1)
        ]
        for serve in serves:
            serve.log.unlink(missing_ok=True)

        def polls_after(moment: float) -> bool:
            return any(c.method == "getUpdates" and c.started > moment for c in standin.state.calls)

        try:
            holder, standby = serves
            await holder.start()
            await _until(lambda: polls_after(0.0), "the first process polling")
            await standby.start()
            await _until(lambda: standby.waiting() >= 1, "the second process waiting")
            takeovers: list[float] = []
            rng = random.Random(15)
            for _ in range(kills):
                # At a random moment of the lease's renewal cycle, not in step with it.
                await asyncio.sleep(rng.uniform(0, LEASE_S))
                killed = await holder.kill()
                await _until(partial(polls_after, killed), "a takeover")
                first = min(
                    c.started
                    for c in standin.state.calls
                    if c.method == "getUpdates" and c.started > killed
                )
                takeovers.append(first - killed)
                before = holder.waiting()
                await holder.start()
                await _until(partial(_more_waits, holder, before), "the restarted standby")
                holder, standby = standby, holder
            user = 400_001
            standin.inject_message(user, user, "where is order A1001")
            await _until(
                lambda: (
                    any(m.text for m in standin.bot_messages(user))
                    if user in standin.state.chats
                    else False
                ),
                "a message answered after the last takeover",
            )
        finally:
            for serve in serves:
                await serve.stop()
        conflicts = sum(s.log.read_text(errors="replace").count("Conflict") for s in serves)
        return takeovers, conflicts


async def run_failover(report: Report, workdir: Path, kills: int) -> None:
    placements = [("same machine", False), ("other machine", True)]
    problem = _can_isolate()
    for placement, isolated in placements:
        if isolated and problem is not None:
            report.note(f"failover, other machine: left out ({problem})")
            continue
        takeovers, conflicts = await measure(workdir, kills, isolated=isolated)
        summary = LatencySummary.of(takeovers)
        labels = {"placement": placement, "lease": f"{LEASE_S:g} s"}
        report.add(SECTION, "kills", len(takeovers), "", labels)
        report.add(SECTION, "takeover p50", summary.p50_ms / 1000, "s", labels)
        report.add(SECTION, "takeover max", summary.max_ms / 1000, "s", labels)
        report.add(SECTION, "Conflict lines", conflicts, "", labels)
        bound = LEASE_S + LEASE_S / 3 + 0.5  # expiry, one try period, a poll's round trip
        report.goal(
            f"poller takeover after SIGKILL ({placement})",
            f"max <= {bound:g} s, 0 Conflict",
            f"p50 {summary.p50_ms / 1000:.2f} s, max {summary.max_ms / 1000:.2f} s, "
            f"{conflicts} Conflict",
            summary.max_ms / 1000 <= bound and conflicts == 0,
        )
