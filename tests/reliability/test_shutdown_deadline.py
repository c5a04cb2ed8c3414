"""SIGTERM with a slow tool call in flight: `stepwise serve` stops within its shutdown
deadline (`STEPWISE_SHUTDOWN_DEADLINE`), exits 0 and gives its leases up; the restarted
process finishes the interrupted run exactly once.

A real `stepwise serve` subprocess, real signals, the Bot API stand-in and an order API
over HTTP whose answer takes 50 s (the tool allows 60). Waits are on conditions (a call
in flight, a row, a message, the process's exit), never on durations.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web

from standin import StandIn
from stepwise.settings import Settings
from tests.local_http import serve_app

from .conftest import DEMO, ServeProcess, bot_texts, query, until

DEADLINE_S = 3.0
SLOW_S = 50.0  # the shop's answer while `slow`: longer than any stop may take
ORDER = "A8001"


@dataclass
class SlowShop:
    url: str = ""
    slow: bool = True
    calls: list[float] = field(default_factory=list)  # when each call arrived
    in_flight: asyncio.Event = field(default_factory=asyncio.Event)
    released: asyncio.Event = field(default_factory=asyncio.Event)  # set at the test's end


@pytest.fixture
async def slow_shop() -> AsyncIterator[SlowShop]:
    shop = SlowShop()

    async def order(request: web.Request) -> web.Response:
        shop.calls.append(time.monotonic())
        if shop.slow:
            shop.in_flight.set()
            # The shop's own slowness (not a test's wait): 50 s, or until the test ends.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(shop.released.wait(), SLOW_S)
        return web.json_response({"order_id": request.match_info["order_id"], "status": "shipping"})

    app = web.Application()
    app.router.add_get("/api/orders/{order_id}", order)
    runner, shop.url = await serve_app(app)
    yield shop
    shop.released.set()
    await runner.cleanup()


def tools_file(tmp_path: Path, base: str) -> Path:
    path = tmp_path / "tools.toml"
    path.write_text(
        f"""
[tools.get_order_status]
url = "{base}/api/orders/{{order_id}}"
timeout_s = 60
max_retries = 0
""",
        encoding="utf-8",
    )
    return path


async def test_sigterm_during_a_50s_tool_call_exits_within_the_deadline_and_resumes_once(
    standin: StandIn, slow_shop: SlowShop, tmp_path: Path
) -> None:
    db = tmp_path / "bot.db"
    env = {
        "STEPWISE_TOOLS": str(tools_file(tmp_path, slow_shop.url)),
        "STEPWISE_SHUTDOWN_DEADLINE": f"{DEADLINE_S:g}",
        # Long leases: a restart that had to wait one out would show.
        "STEPWISE_LEASE": "60",
    }
    serve = ServeProcess(standin, db, tmp_path, env=env)
    await serve.start()
    try:
        standin.inject_message(DEMO, DEMO, f"where is my order {ORDER}")
        await asyncio.wait_for(slow_shop.in_flight.wait(), 60)
        (run_id,) = [r for (r,) in query(db, "SELECT id FROM runs WHERE status = 'running'")]

        assert serve.proc is not None
        signalled = time.monotonic()
        serve.proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(serve.proc.wait(), 120)
        took = time.monotonic() - signalled
        assert code == 0, serve.tail()
        # It waited for the work in hand until the deadline, and not for the 50 s call; the
        # unit's TimeoutStopSec (30 s) was never in reach.
        assert DEADLINE_S <= took < SLOW_S - 10, (took, serve.tail())
        log = serve.log.read_text(errors="replace")
        assert f"deadline of {DEADLINE_S:g} s passed with 1 update(s) in hand" in log
        assert run_id in log
        # The leases were given up: the run's and the update's (no wait for them to lapse).
        now = time.time()
        (lease_until,) = query(db, "SELECT lease_until FROM runs WHERE id = ?", run_id)[0]
        assert lease_until is None or str(lease_until) <= time.strftime(
            "%Y-%m-%dT%H:%M:%S", time.gmtime(now + 1)
        ), lease_until
        assert query(db, "SELECT owner, lease_until FROM inbox WHERE processed_at IS NULL") == [
            (None, None)
        ]
        assert query(db, "SELECT status FROM runs WHERE id = ?", run_id) == [("running",)]

        # The next start finishes the run: one answer, one finish, one more shop call.
        slow_shop.slow = False
        await serve.start()
        await until(
            lambda: query(db, "SELECT status FROM runs WHERE id = ?", run_id) == [("completed",)],
            what="the interrupted run finished after the restart",
        )
        await until(
            lambda: query(db, "SELECT processed_at IS NOT NULL FROM inbox") == [(1,)],
            what="the update marked processed",
        )
        delivered = "SELECT count(*) FROM events WHERE run_id = ? AND kind = 'answer_delivered'"
        await until(lambda: query(db, delivered, run_id) == [(1,)], what="the answer delivered")
        assert await serve.stop() == 0
        answers = [t for t in bot_texts(standin, DEMO) if ORDER in t and "on its way" in t]
        assert len(answers) == 1, bot_texts(standin, DEMO)
        finished = query(
            db, "SELECT count(*) FROM events WHERE run_id = ? AND kind = 'run_finished'", run_id
        )
        assert finished == [(1,)]
        assert query(db, "SELECT count(*) FROM runs") == [(1,)]
        assert len(slow_shop.calls) == 2
    finally:
        await serve.stop()


def test_the_default_deadline_is_below_the_units_stop_timeout() -> None:
    """systemd sends SIGKILL after TimeoutStopSec: the default deadline, plus the moment a
    stop takes after it, must end before that."""
    unit = (Path(__file__).parents[2] / "deploy" / "stepwise@.service").read_text()
    (stop_timeout,) = [
        float(line.partition("=")[2])
        for line in unit.splitlines()
        if line.startswith("TimeoutStopSec=")
    ]
    default = Settings.model_fields["shutdown_deadline_s"].default
    assert default == 20 and default + 5 <= stop_timeout


async def test_sigterm_lets_a_call_in_hand_finish_before_the_deadline(
    standin: StandIn, slow_shop: SlowShop, tmp_path: Path
) -> None:
    """The work in hand is waited for: a call that ends within the deadline is answered
    before the process exits (and the stop takes no new update meanwhile)."""
    db = tmp_path / "bot.db"
    env = {
        "STEPWISE_TOOLS": str(tools_file(tmp_path, slow_shop.url)),
        "STEPWISE_SHUTDOWN_DEADLINE": "300",
    }
    serve = ServeProcess(standin, db, tmp_path, env=env)
    await serve.start()
    try:
        standin.inject_message(DEMO, DEMO, f"where is my order {ORDER}")
        await asyncio.wait_for(slow_shop.in_flight.wait(), 60)
        assert serve.proc is not None
        serve.proc.send_signal(signal.SIGTERM)
        # Receiving stopped: the poller lease is given up before the work in hand ends.
        await until(lambda: query(db, "SELECT count(*) FROM leases") == [(0,)], what="poller gone")
        slow_shop.released.set()  # the shop answers now
        assert await asyncio.wait_for(serve.proc.wait(), 120) == 0
    finally:
        await serve.stop()
    answers = [t for t in bot_texts(standin, DEMO) if ORDER in t and "on its way" in t]
    assert len(answers) == 1, bot_texts(standin, DEMO)
    assert query(db, "SELECT status FROM runs") == [("completed",)]
    assert query(db, "SELECT processed_at IS NOT NULL FROM inbox") == [(1,)]
    assert "deadline" not in serve.log.read_text(errors="replace")
