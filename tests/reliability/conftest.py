"""Shared pieces of the reliability suite.

- `write_seed`: the demo shop plus several customers with many pending orders;
- `ServeProcess`: a real `stepwise serve` (python -m stepwise serve) in a subprocess,
  pointed at an in-process stand-in, that tests kill with SIGKILL and restart;
- the in-process bot, the polling helper and the prompt helpers come from `tests.harness`
  (re-exported here for the suite's modules).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from standin import StandIn
from storage.shop.sqlite import DEFAULT_SEED_PATH
from tests.harness import (
    DEMO,
    OTHER,
    PATIENCE,
    STAFF,
    TOKEN,
    BotHarness,
    bot_texts,
    press,
    prompt_for,
    query,
    start_bot,
    until,
)

InProcessBot = BotHarness
__all__ = [
    "DEMO",
    "OTHER",
    "STAFF",
    "TOKEN",
    "BotHarness",
    "InProcessBot",
    "bot_texts",
    "press",
    "prompt_for",
    "query",
    "start_bot",
    "until",
]


# -- the shop seed -------------------------------------------------------------------------


@dataclass(frozen=True)
class Customer:
    user_id: int
    pending: tuple[str, ...]
    shipping: tuple[str, ...]


def write_seed(path: Path, customers: Sequence[int], *, pending: int = 4) -> list[Customer]:
    """The bundled seed plus, for every customer, `pending` pending and 2 shipping orders."""
    seed = json.loads(DEFAULT_SEED_PATH.read_text(encoding="utf-8"))
    made = []
    for n, user in enumerate(customers, start=1):
        pend = tuple(f"P{n:02d}{k:02d}" for k in range(1, pending + 1))
        ship = tuple(f"S{n:02d}{k:02d}" for k in range(1, 3))
        for order_id in pend:
            seed["orders"].append(
                {
                    "id": order_id,
                    "owner_user_id": user,
                    "status": "pending",
                    "eta": "2026-12-20",
                    "items": ["Widget"],
                }
            )
        for order_id in ship:
            seed["orders"].append(
                {
                    "id": order_id,
                    "owner_user_id": user,
                    "status": "shipping",
                    "eta": "2026-12-09",
                    "items": ["Gadget"],
                }
            )
        made.append(Customer(user, pend, ship))
    path.write_text(json.dumps(seed, ensure_ascii=False), encoding="utf-8")
    return made


# -- reading shared state ------------------------------------------------------------------


# -- a real `stepwise serve` process -------------------------------------------------------


def serve_env(db: Path, base_url: str = "http://127.0.0.1:9/bot", **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))}
    env.update(
        {
            "TELEGRAM_BOT_TOKEN": TOKEN,
            "TELEGRAM_API_BASE_URL": base_url,
            "STEPWISE_DB": str(db),
            "STEPWISE_STAFF_IDS": str(STAFF),
            "PYTHONUNBUFFERED": "1",
            **extra,
        }
    )
    return env


async def stepwise(db: Path, *args: str, workdir: Path, **env: str) -> tuple[int, str, str]:
    """Run one `stepwise` CLI command (python -m stepwise) to the end: (code, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "stepwise",
        *args,
        env=serve_env(db, **env),
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60 * PATIENCE)
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def consistency_problems(db: Path) -> list[str]:
    """What would make a run half-written; [] when every run is absent or consistent."""
    checks = {
        "a step is running while its run is not": "SELECT s.run_id, s.id FROM steps s"
        " JOIN runs r ON r.id = s.run_id WHERE s.status = 'running' AND r.status != 'running'",
        "a planned run without steps": "SELECT id FROM runs r WHERE refusal IS NULL"
        " AND NOT EXISTS (SELECT 1 FROM steps s WHERE s.run_id = r.id)",
        "a run without its run_planned event": "SELECT id FROM runs r WHERE NOT EXISTS"
        " (SELECT 1 FROM events e WHERE e.run_id = r.id AND e.kind = 'run_planned')",
        "a finished run without run_finished": "SELECT id FROM runs r WHERE status IN"
        " ('completed', 'failed', 'declined', 'cancelled') AND (finished_at IS NULL OR NOT EXISTS"
        " (SELECT 1 FROM events e WHERE e.run_id = r.id AND e.kind = 'run_finished'))",
        "a paused run without its pause": "SELECT id FROM runs WHERE status = 'paused'"
        " AND (pause_step_id IS NULL OR pause_nonce IS NULL)",
        "a cancellation its run does not know": "SELECT c.idempotency_key FROM"
        " shop_cancellations c WHERE NOT EXISTS (SELECT 1 FROM steps s WHERE"
        " s.run_id || ':' || s.id = c.idempotency_key AND s.tool = 'cancel_order'"
        " AND s.approval_approved = 1)",
    }
    return [f"{what}: {rows}" for what, sql in checks.items() if (rows := query(db, sql))]


@dataclass
class ServeProcess:
    """`python -m stepwise serve` against `standin`; stdout+stderr go to `log`."""

    standin: StandIn
    db: Path
    workdir: Path
    env: dict[str, str] = field(default_factory=dict)
    argv: Sequence[str] = ("-m", "stepwise", "serve")
    ready_method: str = "getUpdates"  # the Bot API call that shows it is up (setWebhook)
    proc: asyncio.subprocess.Process | None = None
    starts: int = 0
    kills: int = 0

    @property
    def log(self) -> Path:
        return self.workdir / "serve.log"

    async def start(self) -> None:
        """Start and wait until it polls Telegram (the stand-in sees a new getUpdates)."""
        assert self.proc is None or self.proc.returncode is not None
        seen = len(self.standin.state.calls)
        with self.log.open("ab") as out:
            # asyncio's subprocess: the stand-in serves this loop and must never be blocked.
            self.proc = proc = await asyncio.create_subprocess_exec(
                sys.executable,
                *self.argv,
                env=serve_env(self.db, self.standin.base_url, **self.env),
                cwd=self.workdir,  # no stray .env from the developer's checkout
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.starts += 1

        def polling() -> bool:
            if proc.returncode is not None:
                raise AssertionError(
                    f"stepwise serve exited with {proc.returncode}:\n{self.tail()}"
                )
            return any(c.method == self.ready_method for c in self.standin.state.calls[seen:])

        await until(polling, within=30, what=f"stepwise serve calling {self.ready_method}")

    async def kill(self) -> int:
        """SIGKILL: no cleanup, no last writes. Returns the stand-in call count at the kill."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        calls = len(self.standin.state.calls)
        await asyncio.wait_for(self.proc.wait(), 10 * PATIENCE)
        self.kills += 1
        return calls

    async def stop(self) -> int | None:
        """SIGTERM, as a service manager stops it; returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), 20 * PATIENCE)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        return self.proc.returncode

    def tail(self, lines: int = 40) -> str:
        if not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
