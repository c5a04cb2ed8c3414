"""Security: nobody reads, confirms or cancels somebody else's run; secrets stay secret.

Customers attack through everything the bot accepts: messages ("this order" in a group,
someone else's order number), button presses (someone else's button in a group, forged
callback data with a real run id and guessed nonces, staff paging data) and staff commands.
Then the bot token and the webhook secret are looked for in DEBUG logs of a real
`stepwise serve`, in the database file bytes and in `stepwise export` / `show` output.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from standin import StandIn

from .conftest import (
    DEMO,
    OTHER,
    STAFF,
    TOKEN,
    ServeProcess,
    bot_texts,
    press,
    prompt_for,
    query,
    serve_env,
    start_bot,
    until,
)

GROUP = -100_777
# What only A1003's owner may learn: its status, items and date (see shop_seed.json).
A1003_SECRETS = ("not shipped", "待发货", "Mechanical keyboard", "2026-12-10", "pending")


def _toast(standin: StandIn, query_id: str) -> str:
    answers = standin.callback_answers(query_id)
    return answers[0].text or "" if answers else ""


async def test_no_customer_can_touch_another_customers_run(
    standin: StandIn, tmp_path: Path
) -> None:
    bot = await start_bot(standin, tmp_path / "bot.db")
    try:
        standin.inject_message(GROUP, DEMO, "cancel order A1003")
        run_id = await until(
            lambda: bot.query("SELECT id FROM runs WHERE status = 'paused'"), what="pause"
        )
        run_id = run_id[0][0]
        prompt = await until(lambda: prompt_for(standin, GROUP, run_id), what="prompt")
        nonce = prompt.callback_data[0].rsplit(":", 1)[1]

        queries: list[tuple[str, str]] = []
        # 1. Another member of the group presses the real buttons.
        queries.append((press(standin, GROUP, prompt, approve=True, user=OTHER), "not_yours"))
        queries.append((press(standin, GROUP, prompt, approve=False, user=OTHER), "not_yours"))
        # 2. ... forges data with the real run id: the real nonce, and guessed ones.
        for guess in (nonce, "AAAA", "0000000000", nonce[:-1] + "x", nonce + "\n"):
            for verb in ("c", "x"):
                data = f"sw:{verb}:{run_id}:{guess}"
                query_id = standin.press_button(GROUP, prompt.message_id, data, OTHER, forge=True)
                queries.append((query_id, "any"))
        # ... and replays the owner's real data from their own private chat.
        standin.inject_message(OTHER, OTHER, "hello")
        await until(lambda: bot_texts(standin, OTHER), what="a reply to hello")
        mine = standin.bot_messages(OTHER)[-1]
        for data in prompt.callback_data:
            queries.append((standin.press_button(OTHER, mine.message_id, data, OTHER, forge=True), "any"))  # fmt: skip
        # 3. The owner guesses a wrong nonce: refused too (a forged button of one's own).
        for guess in ("AAAAAAAAAAA", nonce.swapcase() if nonce.swapcase() != nonce else "zzzz"):
            query_id = standin.press_button(
                GROUP, prompt.message_id, f"sw:c:{run_id}:{guess}", DEMO, forge=True
            )
            queries.append((query_id, "invalid"))

        await until(
            lambda: all(standin.callback_answers(q) for q, _ in queries),
            what="every press answered",
        )
        for query_id, expected in queries:
            toast = _toast(standin, query_id)
            if expected == "not_yours":
                assert toast == "This button isn't for you.", toast
            elif expected == "invalid":
                assert toast == "This button is no longer valid.", toast
            assert toast not in ("Confirmed, working on it.", "Cancelled, nothing will change.")
        assert bot.query("SELECT status, pause_nonce FROM runs WHERE id = ?", run_id) == [
            ("paused", nonce)
        ]
        assert bot.query("SELECT count(*) FROM events WHERE kind = 'decision_claimed'") == [(0,)]
        still = next(m for m in standin.bot_messages(GROUP) if m.message_id == prompt.message_id)
        assert still.callback_data == prompt.callback_data  # buttons untouched

        # 4. "This order" in the group after the owner mentioned A1003 means nothing for OTHER.
        before = len(bot_texts(standin, GROUP))
        for text in ("cancel this order", "取消这单", "where is my order?", "这个订单到哪了"):
            standin.inject_message(GROUP, OTHER, text)
        await until(lambda: len(bot_texts(standin, GROUP)) >= before + 4, what="four replies")
        # 5. Asking about (or cancelling) the owner's order by number.
        for text in (
            "where is order A1003",
            "cancel order A1003",
            "A1003 如果还没到，看看延迟补偿",
        ):
            standin.inject_message(GROUP, OTHER, text)
            standin.inject_message(OTHER, OTHER, text)

        def others_done() -> bool:  # "hello", 4 × "this order", 3 × 2 about A1003
            rows = bot.query("SELECT status FROM runs WHERE user_id = ?", OTHER)
            return len(rows) == 11 and all(s != "running" for (s,) in rows)

        await until(others_done, what="the other customer's runs finished")
        assert bot.query(
            "SELECT count(*) FROM runs WHERE user_id = ? AND status = 'paused'", OTHER
        ) == [(0,)]
        # Nothing OTHER ran ever observed A1003; "this order" was never read as A1003.
        observed = bot.query(
            "SELECT s.tool, s.status, s.error_type, s.observation FROM steps s"
            " JOIN runs r ON r.id = s.run_id"
            " WHERE r.user_id = ? AND json_extract(s.args, '$.order_id') = 'A1003'",
            OTHER,
        )
        assert observed, "the questions about A1003 were planned"
        for tool, status, error_type, observation in observed:
            assert observation is None, observed
            if tool == "get_order_status":  # the one step that ran, refused by ownership
                assert (status, error_type) == ("failed", "permission_denied"), observed
            else:  # nothing after it ran, paused or asked for a confirmation
                assert status in ("pending", "skipped", "cancelled"), observed
        assert bot.query(
            "SELECT count(*) FROM runs r JOIN steps s ON s.run_id = r.id WHERE r.user_id = ?"
            " AND r.request_text IN ('cancel this order', '取消这单') ", OTHER
        ) == [(0,)]  # fmt: skip
        for chat in (GROUP, OTHER):
            replies = [t for t in bot_texts(standin, chat)[before if chat == GROUP else 0 :]]
            leaked = [t for t in replies if any(s in t for s in A1003_SECRETS)]
            assert not leaked, leaked

        # 6. The owner still can: one press, one cancellation.
        press(standin, GROUP, prompt, approve=True, user=DEMO)
        await until(
            lambda: bot.query("SELECT status FROM runs WHERE id = ?", run_id) == [("completed",)],
            what="owner's confirmation",
        )
        assert bot.query("SELECT order_id, user_id FROM shop_cancellations") == [("A1003", DEMO)]
    finally:
        await bot.stop()


async def test_staff_commands_and_paging_refuse_non_staff(standin: StandIn, tmp_path: Path) -> None:
    bot = await start_bot(standin, tmp_path / "bot.db")
    try:
        for n in range(10):  # enough runs for a second page, from ten customers' chats
            standin.inject_message(30000 + n, 30000 + n, f"where is order A100{n % 5 + 1}")
        await until(
            lambda: bot.query("SELECT count(*) FROM runs WHERE status != 'running'") == [(10,)],
            what="ten runs",
        )
        run_id = bot.query("SELECT id FROM runs LIMIT 1")[0][0]
        # Staff opens /runs in their private chat (staff views are never shown in a group,
        # issue 11 #9), so the page's data is known; the customer replays it everywhere.
        standin.inject_message(STAFF, STAFF, "/runs")
        page = await until(
            lambda: next((m for m in standin.bot_messages(STAFF) if m.buttons), None),
            what="staff's runs page",
        )
        standin.inject_message(GROUP, OTHER, "hello")
        group_message = await until(
            lambda: next(iter(standin.bot_messages(GROUP)), None), what="a bot message in GROUP"
        )
        for text in ("/runs", "/runs paused", f"/run {run_id}", "/stats", "/run", "/stats@x"):
            standin.inject_message(OTHER, OTHER, text)
            standin.inject_message(GROUP, OTHER, text)
        queries = [
            standin.press_button(chat, message_id, data, OTHER, forge=True)
            for data in (page.callback_data[0], "sw:p:*:0", "sw:p:*:8", "sw:p:paused:0")
            for chat, message_id in ((GROUP, group_message.message_id), (OTHER, 1))
        ]
        await until(
            lambda: all(standin.callback_answers(q) for q in queries), what="presses answered"
        )
        assert {_toast(standin, q) for q in queries} == {
            "Sorry, you are not authorised to use this command."
        }
        await until(
            lambda: sum("not authorised" in t for t in bot_texts(standin, OTHER)) >= 5,
            what="refusals in the private chat",
        )
        after = next(m for m in standin.bot_messages(STAFF) if m.message_id == page.message_id)
        assert after.text == page.text and after.edit_count == page.edit_count
        for chat in (OTHER, GROUP):
            for message in standin.bot_messages(chat):
                text = message.text or ""
                assert run_id not in text and "Recent runs" not in text, text
                assert "runs:" not in text and "user 10001" not in text, text
        # Staff still can.
        standin.inject_message(STAFF, STAFF, f"/run {run_id}")
        await until(
            lambda: any(f"Run {run_id}" in t for t in bot_texts(standin, STAFF)), what="timeline"
        )
    finally:
        await bot.stop()


# -- secrets -------------------------------------------------------------------------------

WEBHOOK_SECRET = "whsec-Reliability-Suite-0123456789"
# The operator's switch (the root level), with basicConfig's format naming each level.
DEBUG_ENV = {"STEPWISE_LOG_LEVEL": "DEBUG"}
DEBUG_SERVE = (
    "-c",
    "import logging, sys; logging.basicConfig(level=logging.DEBUG); "
    "from stepwise.cli import main; sys.exit(main(sys.argv[1:]))",
)


def _secrets() -> list[str]:
    return [TOKEN, TOKEN.partition(":")[2], WEBHOOK_SECRET]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_secrets_never_reach_debug_logs_the_database_or_exports(
    standin: StandIn, tmp_path: Path
) -> None:
    db = tmp_path / "bot.db"
    serve = ServeProcess(standin, db, tmp_path, env=DEBUG_ENV, argv=(*DEBUG_SERVE, "serve"))
    await serve.start()
    try:
        standin.inject_message(DEMO, DEMO, "cancel order A1003")
        run_id = (await until(lambda: _paused(db), what="pause"))[0][0]
        prompt = await until(lambda: prompt_for(standin, DEMO, run_id), what="prompt")
        press(standin, DEMO, prompt, approve=True, user=DEMO)
        standin.inject_message(DEMO, DEMO, "where is order Z9999")  # a failure, logged
        standin.fail_next("sendMessage", status=502, chat_id=DEMO)  # a Telegram error, logged
        standin.inject_message(DEMO, DEMO, "what is your refund policy?")
        await until(
            lambda: (
                query(db, "SELECT count(*) FROM runs WHERE status IN ('completed', 'failed')")
                == [(3,)]
            ),
            what="three finished runs",
        )
        standin.inject_message(STAFF, STAFF, f"/run {run_id}")
        await until(lambda: bot_texts(standin, STAFF), what="staff timeline")
        assert await serve.stop() == 0

        # The same bot with a webhook: its secret goes to setWebhook and nowhere else.
        webhook = ServeProcess(
            standin,
            db,
            tmp_path,
            argv=(
                *DEBUG_SERVE,
                "serve",
                "--webhook-url",
                "https://bot.example.invalid",
                "--webhook-secret",
                WEBHOOK_SECRET,
                "--listen",
                "127.0.0.1",
                "--port",
                str(_free_port()),
            ),
            env=DEBUG_ENV,
            ready_method="setWebhook",
        )
        await webhook.start()
        assert await webhook.stop() == 0
        assert standin.calls("setWebhook")[-1].params.get("secret_token") == WEBHOOK_SECRET
    finally:
        await serve.stop()
    _assert_no_secrets(tmp_path, db, run_id, serve.log, serve_env(db, standin.base_url))


def _assert_no_secrets(
    tmp_path: Path, db: Path, run_id: str, log_path: Path, env: dict[str, str]
) -> None:
    """The log, the CLI's outputs and the database file bytes contain no secret."""
    log = log_path.read_text(errors="replace")
    assert "DEBUG" in log and "HTTP Request" in log  # it did log at DEBUG, URLs included
    assert "[REDACTED]" in log
    outputs = {"debug log": log}
    for args in (("export",), ("show", run_id, "--json"), ("runs", "--json"), ("show", run_id)):
        proc = subprocess.run(
            [sys.executable, "-m", "stepwise", *args],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        outputs[" ".join(args)] = proc.stdout + proc.stderr
    files = [p for p in tmp_path.iterdir() if p.name.startswith("bot.db")]
    assert files
    for path in files:
        outputs[path.name] = path.read_bytes().decode("utf-8", errors="replace")
    for where, text in outputs.items():
        for secret in _secrets():
            assert secret not in text, f"{secret[:6]}… found in {where}"


def _paused(db: Path) -> list[tuple[object, ...]]:
    return query(db, "SELECT id FROM runs WHERE status = 'paused'")
