"""`STEPWISE_TOOLS` end to end: the real CLI processes against a local shop API over HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.local_http import serve_app

SECRET = "s3cr3t-shop-token-9f2c"


@dataclass
class Upstream:
    url: str
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    orders: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "A1002": {"order_id": "A1002", "status": "delivered", "owner": 10001},
            "A1003": {"order_id": "A1003", "status": "pending", "owner": 10001},
        }
    )
    cancelled_keys: set[str] = field(default_factory=set)


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    shop = Upstream(url="")

    async def order(request: web.Request) -> web.Response:
        shop.requests.append((request.method, request.path, dict(request.headers)))
        found = shop.orders.get(request.match_info["order_id"])
        if found is None:
            return web.json_response({"error": "no such order"}, status=404)
        if int(request.headers["X-Stepwise-User"]) != found["owner"]:
            return web.json_response({"error": "not yours"}, status=403)
        return web.json_response({k: v for k, v in found.items() if k != "owner"})

    async def policies(request: web.Request) -> web.Response:
        shop.requests.append((request.method, request.path_qs, dict(request.headers)))
        if "refund" in request.query.get("query", "") or "延迟" in request.query.get("query", ""):
            return web.json_response({"results": [{"title": "Refunds", "text": "7 days."}]})
        return web.json_response({"results": []})

    async def cancel(request: web.Request) -> web.Response:
        shop.requests.append((request.method, request.path, dict(request.headers)))
        shop.cancelled_keys.add(request.headers["Idempotency-Key"])
        found = shop.orders[request.match_info["order_id"]]
        found["status"] = "cancelled"
        return web.json_response({"order_id": found["order_id"], "status": "cancelled"})

    app = web.Application()
    app.router.add_get("/api/orders/{order_id}", order)
    app.router.add_get("/api/policies", policies)
    app.router.add_post("/api/orders/{order_id}/cancel", cancel)
    runner, shop.url = await serve_app(app)
    yield shop
    await runner.cleanup()


def write_config(tmp_path: Path, base: str, *, extra: str = "") -> Path:
    path = tmp_path / "tools.toml"
    path.write_text(
        f"""
[tools.get_order_status]
url = "{base}/api/orders/{{order_id}}"
timeout_s = 2

[tools.search_policy]
url = "{base}/api/policies"

[tools.cancel_order]
method = "POST"
url = "{base}/api/orders/{{order_id}}/cancel"
risk = "high"
idempotency = "honoured"
{extra}
[http]
headers = {{ Authorization = "Bearer ${{SHOP_API_TOKEN}}" }}
probe_user_id = 10001
""",
        encoding="utf-8",
    )
    return path


async def stepwise(
    tmp_path: Path, config: Path, *args: str, **extra_env: str
) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))}
    env.update(
        STEPWISE_DB=str(tmp_path / "runs.db"),
        STEPWISE_TOOLS=str(config),
        SHOP_API_TOKEN=SECRET,
        **extra_env,
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "stepwise", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_tools_check_lists_without_requests_and_probe_reads(
    tmp_path: Path, upstream: Upstream
) -> None:
    config = write_config(tmp_path, upstream.url)
    code, out, _ = await stepwise(tmp_path, config, "tools", "check")
    assert code == 0
    assert "get_order_status: GET" in out and "cancel_order: POST" in out and "risk=high" in out
    assert upstream.requests == []

    code, out, _ = await stepwise(tmp_path, config, "tools", "check", "--probe")
    assert code == 0
    assert {method for method, _, _ in upstream.requests} == {"GET"}
    assert SECRET not in out


async def test_conditional_skip_and_one_post_after_confirm(
    tmp_path: Path, upstream: Upstream
) -> None:
    config = write_config(tmp_path, upstream.url)
    code, out, _ = await stepwise(
        tmp_path, config, "ask", "A1002 如果还没送达，帮我看看延迟补偿", "--user", "10001", "--json"
    )
    assert code == 0
    assert [s["status"] for s in json.loads(out)["steps"]] == ["done", "skipped"]
    assert not any("/api/policies" in path for _, path, _ in upstream.requests)

    code, out, _ = await stepwise(
        tmp_path, config, "ask", "cancel order A1003", "--user", "10001", "--json"
    )
    paused = json.loads(out)
    assert paused["status"] == "paused"
    assert not any(method == "POST" for method, _, _ in upstream.requests)

    code, out, _ = await stepwise(
        tmp_path, config, "confirm", paused["run_id"], "--user", "10001", "--json"
    )
    assert code == 0 and json.loads(out)["status"] == "completed"
    posts = [headers for method, _, headers in upstream.requests if method == "POST"]
    assert len(posts) == 1
    assert posts[0]["Idempotency-Key"] == f"{paused['run_id']}:s2"
    assert posts[0]["Authorization"] == f"Bearer {SECRET}"
    assert posts[0]["X-Stepwise-User"] == "10001"

    # The secret went to the upstream and nowhere else.
    for name in os.listdir(tmp_path):
        if name.startswith("runs.db"):
            assert SECRET.encode() not in (tmp_path / name).read_bytes()
    code, exported, _ = await stepwise(tmp_path, config, "export")
    assert code == 0 and SECRET not in exported


async def test_someone_elses_order_over_http_is_refused(tmp_path: Path, upstream: Upstream) -> None:
    config = write_config(tmp_path, upstream.url)
    code, out, _ = await stepwise(
        tmp_path, config, "ask", "where is A1003", "--user", "777", "--json"
    )
    assert code == 1
    assert json.loads(out)["steps"][0]["error"]["type"] == "permission_denied"


async def test_a_bad_config_fails_at_start_with_one_line(
    tmp_path: Path, upstream: Upstream
) -> None:
    config = write_config(tmp_path, upstream.url, extra='\n[tools.refund_everything]\nurl = "x"\n')
    code, _, err = await stepwise(tmp_path, config, "ask", "where is A1003", "--user", "1")
    assert code == 2
    assert err.count("\n") == 1
    assert str(config) in err and "refund_everything" in err
    assert not (tmp_path / "runs.db").exists()  # nothing was opened


async def test_a_delete_without_its_risk_line_is_refused_by_check_ask_and_serve(
    tmp_path: Path, upstream: Upstream
) -> None:
    """Issue 20 item 3: "delete order 730" must never run unconfirmed because `risk` was
    forgotten: the file is refused, one line naming the file, the tool and the field."""
    config = write_config(
        tmp_path,
        upstream.url,
        extra=(
            "\n[tools.delete_order]\n"
            'description = { zh = "删除订单", en = "Delete an order." }\n'
            'goal = { zh = "删除订单 {order_id}", en = "Delete order {order_id}" }\n'
            'args.order_id = { type = "order_id" }\n'
            'phrases = { zh = ["删除订单"], en = ["delete order"] }\n'
            'method = "DELETE"\n'
            f'url = "{upstream.url}/api/orders/{{order_id}}"\n'
        ),
    )
    expected = f"{config}: tool delete_order: risk: missing"
    code, out, err = await stepwise(tmp_path, config, "tools", "check")
    assert code == 2
    assert out.count("\n") == 1 and out.startswith(expected), out
    assert "Traceback" not in out + err
    code, out, err = await stepwise(tmp_path, config, "ask", "delete order 730", "--user", "1")
    assert code == 2 and err.count("\n") == 1 and err.find(expected) >= 0, err
    assert "Traceback" not in err
    code, out, err = await stepwise(
        tmp_path, config, "serve", TELEGRAM_BOT_TOKEN="123456:" + "A" * 35
    )
    assert code == 2 and err.count("\n") == 1 and err.find(expected) >= 0, err
    assert upstream.requests == []  # nothing was asked of the shop, let alone deleted
    assert not (tmp_path / "runs.db").exists()


async def test_doctor_probes_the_read_tools_and_fails_on_a_dead_one(
    tmp_path: Path, upstream: Upstream
) -> None:
    """`stepwise doctor`'s catalog lines: the file loads, each read tool answers its probe
    (as `tools check --probe`); a tool whose server is gone is one ✘ line, exit 1."""
    config = write_config(tmp_path, upstream.url)
    code, out, err = await stepwise(tmp_path, config, "doctor")
    lines = out.splitlines()
    assert any(line.startswith(f"✔ catalog: {config} loads: 3 tool(s)") for line in lines), out
    assert any(line.startswith("✔ tool get_order_status: probe HTTP") for line in lines), out
    assert any(line.startswith("✔ tool search_policy: probe HTTP") for line in lines), out
    assert {method for method, _, _ in upstream.requests} == {"GET"}  # cancel never probed
    assert SECRET not in out + err and "Traceback" not in out + err

    dead = write_config(tmp_path, "http://127.0.0.1:9")
    code, out, err = await stepwise(tmp_path, dead, "doctor")
    assert code == 1
    failing = [line for line in out.splitlines() if line.startswith("✘ tool ")]
    assert [line.split(":")[0] for line in failing] == [
        "✘ tool get_order_status",
        "✘ tool search_policy",
    ]
    assert SECRET not in out + err and "Traceback" not in out + err
