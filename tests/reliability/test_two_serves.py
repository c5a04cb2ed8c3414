"""Two `stepwise serve` processes on one SQLite file (issue 15): a rolling deploy, or an
operator starting a second bot by mistake, while the first one is carrying out a confirmed
cancel. Before run leases, the second one's start-up recovery took the in-flight run and
ran it again: two `step_started`, two `run_finished`, the customer told twice, two POSTs.

The second process is the hot standby of the one-poller lease (`bot.polling`): it does
not poll while the first one lives, but its recovery runs (at start, then every half
lease) like every live process's. What is asserted is what the run store, the shop and
the customer saw.

The lease is short (`STEPWISE_LEASE=3`: renewed every second, recovery every 1.5 s) and
the cancel outlasts it, so the first process keeps the run only by renewing its lease
while the second one's periodic recovery keeps looking.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pytest
from aiohttp import web

from standin import StandIn
from storage.tables import parse_ts, ts
from tests.local_http import serve_app

from .conftest import ServeProcess, bot_texts, press, prompt_for, query, until, write_seed

LEASE = {"STEPWISE_LEASE": "3"}
OTHER_LINE = "is live on this database; runs are shared by lease"


def _cancel_started(db: Path) -> bool:
    return bool(query(db, "SELECT 1 FROM steps WHERE tool = 'cancel_order' AND status = 'running'"))


def _count(db: Path, kind: str, tool: str | None = None) -> int:
    sql = "SELECT count(*) FROM events WHERE kind = ?" + (" AND tool = ?" if tool else "")
    return int(query(db, sql, *((kind, tool) if tool else (kind,)))[0][0])


def _heartbeat(db: Path, serve: ServeProcess) -> str | None:
    assert serve.proc is not None
    rows = query(
        db, "SELECT alive_until FROM process_heartbeats WHERE owner LIKE ?", f"%:{serve.proc.pid}:%"
    )
    return str(rows[0][0]) if rows else None


async def _recovering(serve: ServeProcess) -> None:
    """The standby is up and its recovery loop has started (it says first who else is live)."""
    await until(lambda: "poller: waiting" in serve.tail(), what="the second one on standby")
    await until(lambda: OTHER_LINE in serve.log.read_text(), what="the second one recovering")


async def _confirm_cancel(standin: StandIn, db: Path, user: int, order_id: str) -> str:
    """The customer asks to cancel and presses Confirm; returns the run id."""
    standin.inject_message(user, user, f"cancel order {order_id}")
    run_id = await until(
        lambda: (rows := query(db, "SELECT id FROM runs WHERE status = 'paused'")) and rows[0][0],
        within=30,
        what="the run paused for confirmation",
    )
    prompt = await until(lambda: prompt_for(standin, user, run_id), what="the prompt shown")
    press(standin, user, prompt, True, user)
    return str(run_id)


async def _one_of_everything(standin: StandIn, db: Path, user: int, answer: str) -> None:
    await until(
        lambda: query(db, "SELECT status, lease_owner FROM runs") == [("completed", None)],
        within=30,
        what="the run finished and its answer delivered",
    )
    assert _count(db, "step_started", "cancel_order") == 1
    assert _count(db, "run_finished") == 1
    assert _count(db, "answer_delivered") == 1
    assert [t for t in bot_texts(standin, user) if answer in t] != []
    assert len([t for t in bot_texts(standin, user) if t.startswith(answer)]) == 1


async def test_a_second_serve_never_runs_the_first_ones_confirmed_cancel_again(
    standin: StandIn, tmp_path: Path
) -> None:
    seed = tmp_path / "seed.json"
    (customer,) = write_seed(seed, [61001])
    user, order_id = customer.user_id, customer.pending[0]
    db = tmp_path / "bot.db"
    # Each shop call takes 4.5 s: under the shop tools' 5 s timeout, over the 3 s lease.
    env = {"STEPWISE_SHOP_SEED": str(seed), "STEPWISE_SHOP_LATENCY_MS": "4500", **LEASE}
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first = ServeProcess(standin, db, tmp_path / "one", env=env)
    second = ServeProcess(standin, db, tmp_path / "two", env=env, ready_method="getMe")
    await first.start()
    try:
        # The second one is up and recovering (at start, then every half lease) before the
        # press, so it is live for the whole cancel whatever the machine's speed: it sees the
        # confirmed run `running` under the first one's renewed lease, and leaves it.
        await second.start()
        await _recovering(second)
        await _confirm_cancel(standin, db, user, order_id)
        await until(lambda: _cancel_started(db), what="the confirmed cancel in flight")
        await _one_of_everything(standin, db, user, f"Order {order_id}")
        assert query(db, "SELECT count(*) FROM shop_ledger WHERE tool = 'cancel_order'") == [(1,)]
        assert second.log.read_text().count(OTHER_LINE) == 1
        assert OTHER_LINE not in first.log.read_text()  # it was alone when it started
    except BaseException:
        print(first.tail(60), "\n-----\n", second.tail(60))
        raise
    finally:
        await second.stop()
        await first.stop()


# -- the same at an HTTP backend, where a second execution would be a second POST ----------


@dataclass
class Shop:
    url: str = ""
    posts: list[str] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)


@pytest.fixture
async def http_shop() -> AsyncIterator[Shop]:
    """An order API whose cancel POST is held until the test releases it."""
    shop = Shop()

    async def order(request: web.Request) -> web.Response:
        order_id = request.match_info["order_id"]
        return web.json_response({"order_id": order_id, "status": "pending"})

    async def cancel(request: web.Request) -> web.Response:
        shop.posts.append(request.headers["Idempotency-Key"])
        await shop.release.wait()
        order_id = request.match_info["order_id"]
        return web.json_response({"order_id": order_id, "status": "cancelled"})

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

[tools.cancel_order]
method = "POST"
url = "{base}/api/orders/{{order_id}}/cancel"
risk = "high"
idempotency = "honoured"
timeout_s = 60
""",
        encoding="utf-8",
    )
    return path


async def test_a_second_serve_never_posts_the_first_ones_cancel_again(
    standin: StandIn, tmp_path: Path, http_shop: Shop
) -> None:
    user, order_id = 62001, "A7001"
    db = tmp_path / "bot.db"
    env = {"STEPWISE_TOOLS": str(_tools(tmp_path, http_shop.url)), **LEASE}
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first = ServeProcess(standin, db, tmp_path / "one", env=env)
    second = ServeProcess(standin, db, tmp_path / "two", env=env, ready_method="getMe")
    await first.start()
    try:
        run_id = await _confirm_cancel(standin, db, user, order_id)
        await until(lambda: http_shop.posts, what="the cancel POST in flight")
        await second.start()
        await _recovering(second)
        # Hold the POST until the second process has been live for two leases (its start-up
        # recovery and several periodic ones ran; the run's first lease lapsed long ago).
        seen = await until(lambda: _heartbeat(db, second), what="the second one's heartbeat")
        await until(
            lambda: (now := _heartbeat(db, second)) is not None and now >= _plus(seen, 6),
            within=30,
            what="the second serve live for two leases",
        )
        assert _cancel_started(db)
        http_shop.release.set()
        await _one_of_everything(standin, db, user, f"Order {order_id}")
        assert http_shop.posts == [f"{run_id}:s2"]
    except BaseException:
        print(first.tail(60), "\n-----\n", second.tail(60))
        raise
    finally:
        http_shop.release.set()
        await second.stop()
        await first.stop()


def _plus(stamp: str, seconds: float) -> str:
    moved = ts(parse_ts(stamp) + timedelta(seconds=seconds))
    assert moved is not None
    return moved
