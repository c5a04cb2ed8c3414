"""A confirmed cancel runs once in ONE healthy `stepwise serve` (issue 20, item 1).

The scenario as it was reported: the customer asks to cancel an order, then asks where
three other orders are (the shop is slow to answer), then presses Confirm. The proceed of
the confirmed run waits in the chat's queue behind the slow reads for longer than a lease.
Before the fix the lease lapsed there, the process's own periodic recovery drove the run
(the cancel POST arrived while the reads were still in flight), and then the queued
proceed drove its stale copy: two cancels, two `run_finished`, the answer sent twice.

Here the shop holds the reads until the process has lived through three leases after the
press (its heartbeat, written every third of a lease, shows it), so no timing decides the
outcome. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from agent_core.models import utcnow
from standin import StandIn
from storage.tables import parse_ts, ts
from tests.local_http import serve_app
from tests.storage_backends import Backend

from .conftest import ServeProcess, bot_texts, press, prompt_for, until

LEASE_S = 3
CANCELLED, SLOW = "A7001", ("A7002", "A7003", "A7004")


@dataclass
class Shop:
    url: str = ""
    cancels: list[str] = field(default_factory=list)
    reads_waiting: int = 0
    release: asyncio.Event = field(default_factory=asyncio.Event)


@pytest.fixture
async def shop() -> AsyncIterator[Shop]:
    """An order API whose reads of the `SLOW` orders wait until the test releases them."""
    shop = Shop()

    async def order(request: web.Request) -> web.Response:
        order_id = request.match_info["order_id"]
        if order_id in SLOW:
            shop.reads_waiting += 1
            await shop.release.wait()
        return web.json_response({"order_id": order_id, "status": "pending"})

    async def cancel(request: web.Request) -> web.Response:
        shop.cancels.append(request.headers["Idempotency-Key"])
        return web.json_response(
            {"order_id": request.match_info["order_id"], "status": "cancelled"}
        )

    app = web.Application()
    app.router.add_get("/api/orders/{order_id}", order)
    app.router.add_post("/api/orders/{order_id}/cancel", cancel)
    runner, shop.url = await serve_app(app)
    yield shop
    shop.release.set()
    await runner.cleanup()


def _tools(tmp_path: Path, base: str) -> Path:
    path = tmp_path / "tools.toml"
    path.write_text(
        f"""
[tools.get_order_status]
url = "{base}/api/orders/{{order_id}}"
timeout_s = 60

[tools.cancel_order]
method = "POST"
url = "{base}/api/orders/{{order_id}}/cancel"
risk = "high"
idempotency = "honoured"
""",
        encoding="utf-8",
    )
    return path


def _rows(backend: Backend, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    observer = backend.observer()
    try:
        return [tuple(r) for r in observer.execute(sql, params).fetchall()]
    except Exception:  # the schema is still being created by the serve process
        return []
    finally:
        observer.close()


def _count(backend: Backend, kind: str, tool: str | None = None) -> int:
    sql = "SELECT count(*) FROM events WHERE kind = ?" + (" AND tool = ?" if tool else "")
    rows = _rows(backend, sql, *((kind, tool) if tool else (kind,)))
    return int(rows[0][0]) if rows else 0


def _plus(stamp: str, seconds: float) -> str:
    moved = ts(parse_ts(stamp) + timedelta(seconds=seconds))
    assert moved is not None
    return moved


def _heartbeat_past(backend: Backend, stamp: str) -> Callable[[], bool]:
    def check() -> bool:
        rows = _rows(backend, "SELECT max(alive_until) FROM process_heartbeats")
        return bool(rows and rows[0][0] is not None and str(rows[0][0]) >= stamp)

    return check


async def test_a_confirmed_cancel_queued_behind_slow_reads_runs_once(
    standin: StandIn, tmp_path: Path, shop: Shop, store_backend: Backend
) -> None:
    user = 63001
    env = {
        "STEPWISE_TOOLS": str(_tools(tmp_path, shop.url)),
        "STEPWISE_LEASE": str(LEASE_S),
        "STEPWISE_DB": store_backend.url,
    }
    serve = ServeProcess(standin, tmp_path / "bot.db", tmp_path, env=env)
    await serve.start()
    try:
        standin.inject_message(user, user, f"cancel order {CANCELLED}")
        run_id = await until(
            lambda: (
                (rows := _rows(store_backend, "SELECT id FROM runs WHERE status = 'paused'"))
                and rows[0][0]
            ),
            within=30,
            what="the cancel paused for confirmation",
        )
        prompt = await until(lambda: prompt_for(standin, user, run_id), what="the prompt shown")
        standin.inject_message(user, user, f"where is {SLOW[0]}, {SLOW[1]} and {SLOW[2]}")
        await until(lambda: shop.reads_waiting, what="the slow read in flight")
        pressed_at = ts(utcnow())
        assert pressed_at is not None
        press(standin, user, prompt, True, user)
        await until(
            lambda: (
                _rows(store_backend, "SELECT status FROM runs WHERE id = ?", run_id)
                == [("running",)]
            ),
            what="the press claimed",
        )
        # Three leases pass while the proceed waits behind the read: the process is alive
        # (its heartbeat moves) and its recovery runs every half lease meanwhile.
        await until(
            _heartbeat_past(store_backend, _plus(pressed_at, 4 * LEASE_S)),
            within=60,
            what="three leases lived through after the press",
        )
        assert shop.cancels == [], "the cancel ran before its turn in the chat"
        shop.release.set()
        await until(
            lambda: (
                _rows(store_backend, "SELECT status, lease_owner FROM runs WHERE id = ?", run_id)
                == [("completed", None)]
            ),
            within=60,
            what="the cancel finished and its answer delivered",
        )
        assert shop.cancels == [f"{run_id}:s2"]
        assert _count(store_backend, "step_started", "cancel_order") == 1
        runs_finished = _rows(
            store_backend,
            "SELECT count(*) FROM events WHERE run_id = ? AND kind = 'run_finished'",
            run_id,
        )
        assert runs_finished == [(1,)]
        answers = [t for t in bot_texts(standin, user) if t.startswith(f"Order {CANCELLED}")]
        assert len(answers) == 1, answers
    except BaseException:
        print(serve.tail(80))
        raise
    finally:
        shop.release.set()
        await serve.stop()
