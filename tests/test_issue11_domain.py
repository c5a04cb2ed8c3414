"""Issue 11, the domain's items, each over real HTTP (the bot against the Bot API stand-in,
HTTP tools against a local upstream, the console over ASGI, the CLI as a process):

- 10: a secret echoed by an upstream never survives clipping (whole, or a long prefix);
- 11: an upstream cannot flood a customer: values are bounded, clipped with a notice on
  the run, and one answer is at most two Telegram messages;
- 13: "not yours" and "not found" read the same to the customer; staff keep the type;
- 14: a declined run is `declined` (not `cancelled`), old ones are migrated, and the CLI
  and console filter on it;
- 16: an answer states each order's latest observed state.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

import storage.db
from agent_core.answers.compose import (
    MAX_ANSWER_UNITS,
    MAX_LINE_UNITS,
    TELEGRAM_MESSAGE_UNITS,
    utf16_units,
)
from agent_core.execution import transitions
from agent_core.execution.tools import ToolContext, ToolRegistry
from agent_core.http import build_http_tools, load_tools_config
from agent_core.http.responses import MESSAGE_LIMIT
from agent_core.models import (
    ErrorType,
    Language,
    PlanStep,
    Run,
    RunStatus,
    StepStatus,
    ToolError,
    utcnow,
)
from agent_core.redaction import MIN_PIECE
from console.app import create_app
from standin import StandIn
from storage.db import MIGRATIONS
from storage.runs.sqlite import SqliteRunStore
from tests.fakes import RecordingSleep
from tests.harness import DEMO, BotHarness, press, prompt_for, query, start_bot, until
from tests.local_http import serve_app

TOKEN = "tok-9c2e51d0-Zq7Lw3Xv-SECRET"
STAFF_TOKEN = "staff-token-for-tests-0123456789"


# -- a scripted upstream ------------------------------------------------------------------


class Upstream:
    def __init__(self) -> None:
        self.base = ""
        self.replies: dict[str, tuple[int, bytes]] = {}

    async def handle(self, request: web.Request) -> web.Response:
        status, body = self.replies.get(request.path, (404, b'{"error": "no such order"}'))
        return web.Response(status=status, body=body, content_type="application/json")


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    up = Upstream()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", up.handle)
    runner, up.base = await serve_app(app)
    yield up
    await runner.cleanup()


def tools_file(tmp_path: Path, base: str, *, auth: bool = False) -> Path:
    path = tmp_path / "tools.toml"
    http = '[http]\nheaders = { Authorization = "Bearer ${SHOP_API_TOKEN}" }\n' if auth else ""
    path.write_text(
        f'[tools.get_order_status]\nurl = "{base}/orders/{{order_id}}"\n'
        f'[tools.search_policy]\nurl = "{base}/policies"\n{http}',
        encoding="utf-8",
    )
    return path


# -- item 10 ------------------------------------------------------------------------------


def _leaks(text: str) -> list[str]:
    """Every piece of the secret, from its start, long enough to matter, found in `text`."""
    return [TOKEN[:n] for n in range(MIN_PIECE, len(TOKEN) + 1) if TOKEN[:n] in text]


@pytest.mark.parametrize("echo", ["whole", "prefix"])
async def test_10_a_secret_at_any_offset_around_the_clip_never_survives(
    upstream: Upstream, tmp_path: Path, echo: str
) -> None:
    config = load_tools_config(
        tools_file(tmp_path, upstream.base, auth=True), env={"SHOP_API_TOKEN": TOKEN}
    )
    ctx = ToolContext(user_id=DEMO, trace_id="t", run_id="r", step_id="s1")
    said = TOKEN if echo == "whole" else TOKEN[:11]
    # The clip keeps MESSAGE_LIMIT - 1 characters of the upstream's text: put the secret
    # across that boundary at every offset (and a few well before and after it).
    offsets = [*range(MESSAGE_LIMIT - len(TOKEN) - 3, MESSAGE_LIMIT + 3), 0, 40, 600]
    async with httpx.AsyncClient() as client:
        tools = ToolRegistry(build_http_tools(config, client, sleep=RecordingSleep()))
        for offset in offsets:
            for shape in ("text", "json"):
                text = "x" * offset + f"auth {said} rejected " + "y" * 400
                body = json.dumps({"message": text}) if shape == "json" else text
                upstream.replies["/orders/A1001"] = (401, body.encode())
                result = await tools.call("get_order_status", {"order_id": "A1001"}, ctx)
                assert isinstance(result, ToolError), result
                assert result.error_type is ErrorType.BACKEND  # the key refused (issue 22)
                assert _leaks(result.message) == [], (offset, shape, result.message)
                if offset + 10 < MESSAGE_LIMIT:  # before the cut: shown as redacted
                    assert "auth ***" in result.message, result.message


def test_10_redaction_removes_every_long_start_of_a_secret() -> None:
    config = load_tools_config_from_text(
        '[tools.get_order_status]\nurl = "https://s.example/o/{order_id}"\n'
        '[http]\nheaders = { Authorization = "Bearer ${SHOP_API_TOKEN}", X-Key = "literal-key-123" }\n'
    )
    assert config.redact(f"a {TOKEN} b") == "a *** b"
    assert config.redact(f"a {TOKEN[:6]}| b {TOKEN[:5]}|") == f"a ***| b {TOKEN[:5]}|"
    assert config.redact("Bearer token expired") == "Bearer token expired"  # not a secret
    assert config.redact("literal-k…") == "***…"


def load_tools_config_from_text(text: str) -> Any:
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"issue11-{os.getpid()}.toml"
    path.write_text(text, encoding="utf-8")
    try:
        return load_tools_config(path, env={"SHOP_API_TOKEN": TOKEN})
    finally:
        path.unlink()


# -- item 11 ------------------------------------------------------------------------------


async def test_11_a_flooding_upstream_reaches_the_customer_clipped_in_two_messages(
    standin: StandIn, upstream: Upstream, tmp_path: Path
) -> None:
    huge_eta = "9" * 40_000
    upstream.replies["/orders/A1001"] = (
        200,
        json.dumps({"order_id": "A1001", "status": "shipping", "eta": huge_eta}).encode(),
    )
    # Policies as big as an upstream may send (≈900 KB): each text far over its bound.
    policies = [{"title": "T" * 5000, "text": "政" * 100_000} for _ in range(3)]
    body = json.dumps({"results": policies}, ensure_ascii=False).encode()
    assert 900_000 < len(body) < 1 << 20
    upstream.replies["/policies"] = (200, body)
    bot = await start_bot(
        standin, tmp_path / "bot.db", STEPWISE_TOOLS=str(tools_file(tmp_path, upstream.base))
    )
    try:
        standin.inject_message(
            DEMO,
            DEMO,
            "Check order A1001 and if it hasn't arrived, what's the delay compensation policy?",
        )
        await until(
            lambda: bot.query("SELECT 1 FROM runs WHERE status = 'completed'"), what="the answer"
        )
        await until(lambda: len(bot.bot_texts(DEMO)) >= 4, what="the answer delivered")
        texts = bot.bot_texts(DEMO)
        answer = [t for t in texts if not t.startswith(("Here is my plan", "✅", "⏳", "⚠️"))]
        assert 1 <= len(answer) <= 2, [t[:80] for t in texts]
        assert all(utf16_units(t) <= TELEGRAM_MESSAGE_UNITS for t in answer)
        assert sum(utf16_units(t) for t in answer) <= MAX_ANSWER_UNITS
        assert huge_eta not in "".join(texts) and "9" * 41 not in "".join(texts)
        notices = bot.query("SELECT step_id, message FROM events WHERE kind = 'notice'")
        assert ("s1", "eta: clipped from 40000 to 40 characters") in notices, notices
        assert ("s2", "result.0.text: clipped from 100000 to 1500 characters") in notices
    finally:
        await bot.stop()


def test_11_an_answer_longer_than_two_messages_is_clipped_and_noted() -> None:
    run = Run(
        id="r", trace_id="t", user_id=DEMO, chat_id=DEMO, request_text="x", language=Language.EN,
        steps=[
            PlanStep(
                id=f"s{n}", goal="g", tool="search_policy", args={"query": "q"},
                status=StepStatus.DONE,
                observation=[{"title": "😀" * 100, "text": "政" * 1500} for _ in range(3)],
            )
            for n in range(1, 5)
        ],
    )  # fmt: skip
    event = transitions.finish(run, RunStatus.COMPLETED, now=utcnow())
    answer = run.answer or ""
    assert event.message == "answer clipped to fit two Telegram messages"
    assert utf16_units(answer) <= MAX_ANSWER_UNITS and answer.endswith("…")
    assert all(utf16_units(line) <= MAX_LINE_UNITS for line in answer.split("\n"))
    # Packed line by line into messages of 4096 units, it never needs a third.
    parts, current = [], 0
    for line in answer.split("\n"):
        size = utf16_units(line) + (1 if current else 0)
        if current + size > TELEGRAM_MESSAGE_UNITS:
            parts.append(current)
            current = utf16_units(line)
        else:
            current += size
    assert len([*parts, current]) <= 2


# -- items 13, 14, 16 through the bot -------------------------------------------------------


@pytest.fixture
async def bot(standin: StandIn, tmp_path: Path) -> AsyncIterator[BotHarness]:
    running = await start_bot(standin, tmp_path / "bot.db", show_after_s=5.0)
    yield running
    await running.stop()


async def test_13_not_yours_and_not_found_read_the_same_but_staff_see_the_type(
    bot: BotHarness,
) -> None:
    answers = []
    for order_id in ("B2001", "Z9999"):
        bot.standin.inject_message(DEMO, DEMO, f"where is order {order_id}")
        message = await bot.until_text(DEMO, f"order {order_id} on this account")
        answers.append((message.text or "").replace(order_id, "#"))
    assert (
        answers[0]
        == answers[1]
        == (
            "I couldn't find order # on this account.\n"
            "Please check the order number, and write from the account you ordered with."
        )
    )
    assert all("belong" not in t for t in bot.bot_texts(DEMO))
    progress = [t for t in bot.bot_texts(DEMO) if t.startswith("❌")]
    assert [t.replace("B2001", "#").replace("Z9999", "#") for t in progress] == [
        "❌ Check the status of order # — failed: not found"
    ] * 2
    assert sorted(bot.query("SELECT error_type FROM steps")) == [
        ("not_found",),
        ("permission_denied",),
    ]


async def test_14_a_declined_run_is_declined_for_staff_cli_and_console(
    bot: BotHarness, tmp_path: Path
) -> None:
    bot.standin.inject_message(DEMO, DEMO, "cancel order A1003")
    (run_id,) = await until(lambda: bot.query("SELECT id FROM runs WHERE status = 'paused'"))
    prompt = await until(lambda: prompt_for(bot.standin, DEMO, run_id[0]))
    press(bot.standin, DEMO, prompt, approve=False, user=DEMO)
    await until(lambda: bot.query("SELECT status FROM runs") == [("declined",)])
    assert bot.query("SELECT status FROM shop_orders WHERE id = 'A1003'") == [("pending",)]
    assert bot.query("SELECT status FROM events WHERE kind = 'run_finished'") == [("declined",)]

    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))}
    env["STEPWISE_DB"] = str(bot.db)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "stepwise", "runs", "--status", "declined", "--json", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    assert proc.returncode == 0, err
    assert [(r["id"], r["status"]) for r in json.loads(out)] == [(run_id[0], "declined")]

    app = create_app(bot.runtime.store, staff_token=STAFF_TOKEN)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://console") as client:
        form = await client.get("/login")
        csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert csrf is not None
        await client.post("/login", data={"csrf": csrf[1], "token": STAFF_TOKEN, "next": "/"})
        listed = await client.get("/runs", params={"status": "declined"})
        assert listed.status_code == 200 and run_id[0] in listed.text
        assert '<option value="declined" selected>' in listed.text
        page = await client.get(f"/runs/{run_id[0]}")
        assert "declined by the customer, nothing changed" in page.text


async def test_14_old_declined_runs_are_migrated_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "old.db"
    monkeypatch.setattr(storage.db, "MIGRATIONS", MIGRATIONS[:3])
    await (await SqliteRunStore.open(db)).close()
    with sqlite3.connect(db) as conn:
        for run_id, approved in (("declined1", 0), ("odd1", None)):
            conn.execute(
                "INSERT INTO runs (id, trace_id, user_id, chat_id, request_text, language,"
                " status, max_attempts, created_at, updated_at) VALUES"
                " (?, 't', 1, 1, 'cancel order A1', 'en', 'cancelled', 10, 'x', 'x')",
                (run_id,),
            )
            conn.execute(
                "INSERT INTO steps (run_id, position, id, goal, tool, args, status, max_retries,"
                " approval_approved) VALUES (?, 0, 's1', 'g', 'cancel_order', '{}', 'cancelled',"
                " 0, ?)",
                (run_id, approved),
            )
            conn.execute(
                "INSERT INTO events (run_id, trace_id, kind, status, at)"
                " VALUES (?, 't', 'run_finished', 'cancelled', 'x')",
                (run_id,),
            )
    monkeypatch.undo()
    await (await SqliteRunStore.open(db)).close()
    assert query(db, "SELECT id, status FROM runs ORDER BY id") == [
        ("declined1", "declined"),
        ("odd1", "cancelled"),  # no declined step: not rewritten on a guess
    ]
    assert query(db, "SELECT run_id, status FROM events ORDER BY run_id") == [
        ("declined1", "declined"),
        ("odd1", "cancelled"),
    ]
    assert RunStatus("cancelled").value == "cancelled"  # old rows still load


async def test_16_after_cancelling_an_order_in_transit_the_answer_says_only_cancelled(
    bot: BotHarness,
) -> None:
    bot.standin.inject_message(DEMO, DEMO, "cancel order A1005")
    (run_id,) = await until(lambda: bot.query("SELECT id FROM runs WHERE status = 'paused'"))
    prompt = await until(lambda: prompt_for(bot.standin, DEMO, run_id[0]))
    assert "Order A1005 is on its way" in (prompt.text or "")  # true while it waits
    press(bot.standin, DEMO, prompt, approve=True, user=DEMO)
    await bot.until_text(DEMO, "Order A1005 has been cancelled.")
    (answer,) = bot.query("SELECT answer FROM runs")
    assert answer == ("Order A1005 has been cancelled.",)
    assert bot.bot_texts(DEMO)[-1] == "Order A1005 has been cancelled."
