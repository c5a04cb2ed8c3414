"""Operating a real `stepwise serve` (issue 25): /healthz, /readyz and /metrics over HTTP,
readiness turning red and green again with the Bot API and the database, the metrics of a
scripted conversation, and JSON logs without secrets or customer text.

Everything waits on conditions (an HTTP answer, a row, a message), never on durations.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from standin import StandIn
from tests.local_http import serve_app

from .conftest import DEMO, STAFF, TOKEN, ServeProcess, press, prompt_for, query, until

FORUM = -1005555555555
SHOP_KEY = "shop-key-5f2b8c1e9d7a4b6c"
CANCEL, MISSING = "A8001", "Z9999"
SECRET_QUESTION = "cancel order A8001 my secret word is periwinkle"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def until_http(
    client: httpx.AsyncClient,
    path: str,
    check: Callable[[httpx.Response], bool],
    *,
    what: str,
    within: float = 60.0,
) -> httpx.Response:
    """GET `path` until `check` holds for the answer (a connection refused is no answer)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    last: Any = None
    while True:
        try:
            last = await client.get(path)
            if check(last):
                return last
        except httpx.TransportError as exc:
            last = exc
        if loop.time() > deadline:
            body = last.text if isinstance(last, httpx.Response) else repr(last)
            raise AssertionError(f"{what}: not reached within {within}s; last: {body}")
        await asyncio.sleep(0.05)  # polling for a condition, not waiting out a duration


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(text: str, name: str, **labels: str) -> float:
    return samples(text).get((name, frozenset(labels.items())), 0.0)


def check_of(response: httpx.Response, name: str) -> dict[str, str]:
    body = response.json()
    return next(c for c in body["checks"] if c["name"] == name)


# -- readiness: red and green ---------------------------------------------------------------


async def test_health_and_readiness_follow_the_bot_api_and_the_database(
    standin: StandIn, tmp_path: Path
) -> None:
    port = free_port()
    db = tmp_path / "bot.db"
    env = {"STEPWISE_HEALTH_PORT": str(port), "STEPWISE_DB_TIMEOUT": "0.3"}
    serve = ServeProcess(standin, db, tmp_path, env=env)
    await serve.start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            live = await client.get("/healthz")
            assert live.status_code == 200, live.text
            assert live.json() == {
                "status": "ok",
                "checks": [{"name": "event_loop", "status": "ok"}],
            }
            ready = await until_http(
                client, "/readyz", lambda r: r.status_code == 200, what="ready"
            )
            names = [c["name"] for c in ready.json()["checks"]]
            assert names == [
                "database",
                "migrations",
                "telegram",
                "poller_lease",
                "inbox_backlog",
            ]
            assert check_of(ready, "poller_lease")["reason"] == "holding"
            assert TOKEN not in ready.text

            # The Bot API stops answering getMe: not ready, says why; back: ready again.
            standin.fail_next("getMe", 1_000_000, status=502)
            red = await until_http(
                client, "/readyz", lambda r: r.status_code == 503, what="red without getMe"
            )
            assert check_of(red, "telegram")["status"] == "failing"
            assert check_of(red, "database")["status"] == "ok"
            assert TOKEN not in red.text
            assert (await client.get("/healthz")).status_code == 200  # alive all along
            standin.clear_faults()
            await until_http(
                client, "/readyz", lambda r: r.status_code == 200, what="green with getMe"
            )

            # Another process holds the database's write lock: the poller lease cannot be
            # renewed, so this replica is not ready; released: ready again.
            blocker = sqlite3.connect(db, isolation_level=None, timeout=10)
            try:
                blocker.execute("BEGIN IMMEDIATE")
                red = await until_http(
                    client,
                    "/readyz",
                    lambda r: (
                        r.status_code == 503 and check_of(r, "poller_lease")["status"] == "failing"
                    ),
                    what="red with the database locked",
                )
                assert "lease" in check_of(red, "poller_lease")["reason"]
            finally:
                blocker.execute("ROLLBACK")
                blocker.close()
            await until_http(
                client, "/readyz", lambda r: r.status_code == 200, what="green once unlocked"
            )
            metrics = await client.get("/metrics")
            assert metrics.status_code == 200
            assert metrics.headers["content-type"].startswith("text/plain")
            assert value(metrics.text, "stepwise_poller_holding") == 1
            assert (
                value(
                    metrics.text,
                    "stepwise_telegram_requests_total",
                    method="getMe",
                    result="network",
                )
                >= 1
            )
    finally:
        assert await serve.stop() == 0


# -- a scripted conversation: metrics and logs ----------------------------------------------


@pytest.fixture
async def shop() -> AsyncIterator[str]:
    """An order API that wants its key: A8001 pending (cancellable), Z9999 unknown."""

    def authorised(request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bearer {SHOP_KEY}"

    async def order(request: web.Request) -> web.Response:
        if not authorised(request):
            return web.json_response({"error": "unauthorised"}, status=401)
        order_id = request.match_info["order_id"]
        if order_id != CANCEL:
            return web.json_response({"error": "no such order"}, status=404)
        return web.json_response({"order_id": order_id, "status": "pending"})

    async def cancel(request: web.Request) -> web.Response:
        if not authorised(request):
            return web.json_response({"error": "unauthorised"}, status=401)
        return web.json_response(
            {"order_id": request.match_info["order_id"], "status": "cancelled"}
        )

    app = web.Application()
    app.router.add_get("/api/orders/{order_id}", order)
    app.router.add_post("/api/orders/{order_id}/cancel", cancel)
    runner, url = await serve_app(app)
    yield url
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

[http]
headers = {{ Authorization = "Bearer ${{SHOP_API_TOKEN}}" }}
""",
        encoding="utf-8",
    )
    return path


def _run(db: Path, status: str) -> tuple[str, str] | None:
    rows = query(db, "SELECT id, trace_id FROM runs WHERE status = ? ORDER BY created_at", status)
    return (str(rows[-1][0]), str(rows[-1][1])) if rows else None


async def test_metrics_and_json_logs_of_a_scripted_conversation(
    standin: StandIn, tmp_path: Path, shop: str
) -> None:
    standin.add_chat(FORUM, STAFF, title="Support staff", is_forum=True, first_name="Sam")
    standin.set_bot_rights(FORUM, can_manage_topics=True)
    port = free_port()
    db = tmp_path / "bot.db"
    env = {
        "STEPWISE_HEALTH_PORT": str(port),
        "STEPWISE_TOOLS": str(_tools(tmp_path, shop)),
        "SHOP_API_TOKEN": SHOP_KEY,
        "STEPWISE_STAFF_CHAT_ID": str(FORUM),
        "STEPWISE_LOG_FORMAT": "json",
        "STEPWISE_LOG_LEVEL": "INFO",
    }
    serve = ServeProcess(standin, db, tmp_path, env=env)
    await serve.start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            # 1. A cancel that waits for the customer's Confirm: one approval pending.
            standin.inject_message(DEMO, DEMO, SECRET_QUESTION, first_name="Ada")
            paused = await until(lambda: _run(db, "paused"), within=60, what="the paused cancel")
            run_id, trace_id = paused
            prompt = await until(lambda: prompt_for(standin, DEMO, run_id), what="the prompt")
            await until_http(
                client,
                "/metrics",
                lambda r: value(r.text, "stepwise_approvals_pending", approver="customer") == 1,
                what="one approval pending",
            )
            press(standin, DEMO, prompt, True, DEMO)
            await until(lambda: _run(db, "completed"), within=60, what="the cancel done")

            # 2. A failing tool: the shop does not know the order.
            standin.inject_message(DEMO, DEMO, f"where is order {MISSING}")
            await until(lambda: _run(db, "failed"), within=60, what="the failed lookup")

            # 3. A handoff, and a staff reply that reaches the customer.
            standin.inject_message(DEMO, DEMO, "talk to a person please")
            topics = await until(lambda: standin.topics(FORUM), what="the customer's topic")
            thread = int(topics[0]["message_thread_id"])
            standin.inject_message(FORUM, STAFF, "Hello, Sam here.", message_thread_id=thread)
            await until(
                lambda: any(m.text == "Hello, Sam here." for m in standin.bot_messages(DEMO)),
                what="the staff reply",
            )

            def settled(r: httpx.Response) -> bool:
                return (
                    value(r.text, "stepwise_handoff_first_reply_seconds_count") == 1
                    and value(r.text, "stepwise_approvals_pending", approver="customer") == 0
                )

            text = (await until_http(client, "/metrics", settled, what="metrics settled")).text
            # Every run of the conversation counted once, by its final status (the handoff
            # request is a run too): the metrics agree with the database.
            statuses = query(db, "SELECT status, count(*) FROM runs GROUP BY status")
            assert {"completed", "failed"} <= {status for status, _ in statuses}, statuses
            for status, count in statuses:
                assert value(text, "stepwise_runs_finished_total", status=status) == count, (
                    status,
                    [line for line in text.splitlines() if line.startswith("stepwise_runs")],
                )
            assert value(text, "stepwise_runs_started_total", kind="plan") >= 2
            assert (
                value(
                    text,
                    "stepwise_tool_failures_total",
                    tool="get_order_status",
                    error_type="not_found",
                )
                == 1
            )
            assert value(text, "stepwise_step_duration_seconds_count", tool="cancel_order") == 1
            assert (
                value(
                    text,
                    "stepwise_approval_decisions_total",
                    approver="customer",
                    decision="approved",
                )
                == 1
            )
            assert value(text, "stepwise_handoffs_open") == 1
            assert value(text, "stepwise_unknown_outcomes_total", tool="cancel_order") == 0
            assert (
                value(
                    text,
                    "stepwise_understanding_total",
                    intent="cancel_order",
                    outcome="recognised",
                )
                == 1
            )
            assert (
                value(text, "stepwise_telegram_requests_total", method="sendMessage", result="ok")
                >= 3
            )
            assert (
                value(text, "stepwise_telegram_requests_total", method="getUpdates", result="ok")
                >= 1
            )
            assert value(text, "stepwise_inbox_processing_lag_seconds_count") >= 4
            # Bounded labels: no user ids, order ids or customer text anywhere in the series.
            for _name, labels in samples(text):
                for _, label in labels:
                    assert str(DEMO) not in label and CANCEL not in label and MISSING not in label
            assert "periwinkle" not in text
    finally:
        assert await serve.stop() == 0

    log = serve.log.read_text(errors="replace")
    assert TOKEN not in log and TOKEN.partition(":")[2] not in log
    assert SHOP_KEY not in log
    assert "periwinkle" not in log and SECRET_QUESTION not in log
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    assert lines, log[-2000:]
    assert all({"ts", "level", "logger", "message"} <= set(line) for line in lines)
    owners = {line["replica"] for line in lines if "replica" in line}
    assert len(owners) == 1 and str(owners.pop()).count(":") == 2  # host:pid:random
    finished = [line for line in lines if line.get("trace_id") == trace_id]
    assert finished, f"no JSON line carries the trace id {trace_id}"
    assert all(line["run_id"] == run_id for line in finished)
    assert any(line["message"] == "run finished: completed" for line in finished)
    assert all(line["chat_id"] == DEMO and "replica" in line for line in finished)


async def test_a_webhooks_public_port_serves_no_health_or_metrics_by_default(
    standin: StandIn, tmp_path: Path
) -> None:
    """The webhook's port is public: /healthz, /readyz and /metrics are on the health port
    only, unless STEPWISE_HEALTH_ON_WEBHOOK puts them on the webhook's port too."""
    port, health_port = free_port(), free_port()
    serve = ServeProcess(
        standin,
        tmp_path / "bot.db",
        tmp_path,
        env={"STEPWISE_HEALTH_PORT": str(health_port)},
        argv=(
            "-m",
            "stepwise",
            "serve",
            "--webhook-url",
            f"http://127.0.0.1:{port}",
            "--port",
            str(port),
        ),
        ready_method="setWebhook",
    )
    await serve.start()
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            health = f"http://127.0.0.1:{health_port}"
            ready = f"{health}/readyz"
            await until_http(client, ready, lambda r: r.status_code == 200, what="ready")
            assert (await client.get(f"{health}/metrics")).status_code == 200
            webhook = f"http://127.0.0.1:{port}"
            await until_http(client, f"{webhook}/healthz", lambda r: True, what="listening")
            for path in ("/healthz", "/readyz", "/metrics"):
                assert (await client.get(f"{webhook}{path}")).status_code == 404
    finally:
        assert await serve.stop() == 0


async def test_a_setting_serves_the_same_paths_on_the_webhooks_port(
    standin: StandIn, tmp_path: Path
) -> None:
    port = free_port()
    serve = ServeProcess(
        standin,
        tmp_path / "bot.db",
        tmp_path,
        env={"STEPWISE_HEALTH_ON_WEBHOOK": "true"},
        argv=(
            "-m",
            "stepwise",
            "serve",
            "--webhook-url",
            f"http://127.0.0.1:{port}",
            "--port",
            str(port),
        ),
        ready_method="setWebhook",
    )
    await serve.start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            ready = await until_http(
                client, "/readyz", lambda r: r.status_code == 200, what="ready on the webhook port"
            )
            assert check_of(ready, "poller_lease")["reason"] == "webhook: no poller lease"
            assert (await client.get("/healthz")).status_code == 200
            text = (await client.get("/metrics")).text
            assert (
                value(text, "stepwise_telegram_requests_total", method="setWebhook", result="ok")
                == 1
            )
    finally:
        assert await serve.stop() == 0
