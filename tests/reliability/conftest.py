"""Shared pieces of the reliability suite.

- `write_seed`: the demo shop plus several customers with many pending orders;
- `ServeProcess`: a real `stepwise serve` (python -m stepwise serve) in a subprocess,
  pointed at an in-process stand-in, that tests kill with SIGKILL and restart;
- `start_bot`: the same PTB application in-process, for fault injection around tools;
- `until`: wait for a condition on shared state (DB, stand-in) with a deadline. Polling a
  condition is the synchronisation; nothing here sleeps "long enough".
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent_core.policy import Backoff, FailurePolicy
from agent_core.tools import Tool
from standin import DEFAULT_TOKEN, ShownMessage, StandIn
from stepwise.runtime import Runtime, open_runtime
from stepwise.serve import bot_application
from stepwise.settings import Settings
from storage.shop import DEFAULT_SEED_PATH

TOKEN = DEFAULT_TOKEN
STAFF = 900
DEMO = 10001
OTHER = 20002


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


def query(db: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Read the bot's database from outside (WAL: never blocks the bot's writers)."""
    conn = sqlite3.connect(db, timeout=10)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


async def until(
    condition: Callable[[], Any], *, within: float = 20.0, what: str = "condition"
) -> Any:
    """Poll `condition` (DB or stand-in state) until it is truthy; fail after `within` s."""
    deadline = time.monotonic() + within
    while True:
        try:
            value = condition()
        except sqlite3.OperationalError:  # the schema is still being created
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {within}s")
        await asyncio.sleep(0.01)


def bot_texts(standin: StandIn, chat_id: int) -> list[str]:
    if chat_id not in standin.state.chats:
        return []
    return [m.text or "" for m in standin.bot_messages(chat_id)]


def prompt_for(standin: StandIn, chat_id: int, run_id: str) -> ShownMessage | None:
    """The newest message showing the Confirm/Cancel buttons of `run_id`, if any."""
    if chat_id not in standin.state.chats:
        return None
    for message in reversed(standin.bot_messages(chat_id)):
        if any(f":{run_id}:" in data for data in message.callback_data):
            return message
    return None


def press(standin: StandIn, chat_id: int, prompt: ShownMessage, approve: bool, user: int) -> str:
    """Tap Confirm (or Cancel) on a prompt, as the given user; returns the query id."""
    data = next(d for d in prompt.callback_data if d.startswith("sw:c:" if approve else "sw:x:"))
    return standin.press_button(chat_id, prompt.message_id, data, user)


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
    out, err = await asyncio.wait_for(proc.communicate(), 60)
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
        " ('completed', 'failed', 'cancelled') AND (finished_at IS NULL OR NOT EXISTS"
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
        await asyncio.wait_for(self.proc.wait(), 10)
        self.kills += 1
        return calls

    async def stop(self) -> int | None:
        """SIGTERM, as a service manager stops it; returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), 20)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        return self.proc.returncode

    def tail(self, lines: int = 40) -> str:
        if not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


# -- the bot in-process --------------------------------------------------------------------


@dataclass
class InProcessBot:
    standin: StandIn
    runtime: Runtime
    app: Any
    db: Path

    async def stop(self) -> None:
        if self.app.updater.running:
            await self.app.updater.stop()
        if self.app.running:
            await self.app.stop()
        await self.app.shutdown()
        await self.runtime.close()

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        return query(self.db, sql, *params)


async def start_bot(
    standin: StandIn,
    db: Path,
    *,
    tools: Sequence[Tool] | None = None,
    show_after_s: float = 0.5,
    **env: str,
) -> InProcessBot:
    """The production application (bot_application) in this process, polling `standin`."""
    settings = Settings.model_validate(
        {
            "TELEGRAM_BOT_TOKEN": TOKEN,
            "TELEGRAM_API_BASE_URL": standin.base_url,
            "STEPWISE_DB": str(db),
            "STEPWISE_STAFF_IDS": str(STAFF),
            **env,
        }
    )
    policy = FailurePolicy(backoff=Backoff(base_s=0.05, cap_s=0.2))
    runtime = await open_runtime(settings, tools=tools, policy=policy)
    app = bot_application(runtime, show_after_s=show_after_s)
    await app.initialize()
    await app.start()
    await app.updater.start_polling(poll_interval=0, timeout=1)
    return InProcessBot(standin, runtime, app, db)


@pytest.fixture
async def standin() -> AsyncIterator[StandIn]:
    async with StandIn() as server:
        yield server
