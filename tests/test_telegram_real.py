"""Issue 11, the bot side: Telegram as it really is, each item over real HTTP.

The production application long-polls the stand-in (`tests.harness.start_bot`); a test
plays the customer, staff or an attacker and asserts on what the chats show, the Bot API
calls the bot made and the database. Texts are taken from `bot.texts` and
`agent_core.answers.compose`, never retyped here.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from agent_core.models import Language, utcnow
from bot.progress import Typing
from bot.ratelimit import CHAT_BURST, CHAT_INTERVAL_S, counts_as_message
from bot.texts import say
from console.auth import SESSION_COOKIE
from console.server import serve_console
from standin import DEFAULT_TOKEN, CallRecord, FloodLimits, ShownMessage, StandIn
from standin.formatting import MAX_TEXT_LENGTH, utf16_len
from stepwise.serve import start_recovery
from storage.runs.sqlite import SqliteRunStore
from storage.tables import ts
from tests.harness import (
    DEMO,
    OTHER,
    STAFF,
    BotHarness,
    bot_texts,
    press,
    prompt_for,
    query,
    start_bot,
    until,
    until_sync,
)
from tests.test_console import sign_in

ROOT = Path(__file__).resolve().parent.parent

EN, ZH = Language.EN, Language.ZH


@pytest.fixture
async def bot(standin: StandIn, tmp_path: Path) -> AsyncIterator[BotHarness]:
    running = await start_bot(standin, tmp_path / "bot.db")
    yield running
    await running.stop()


def run_ids(bot: BotHarness) -> list[str]:
    return [row[0] for row in bot.query("SELECT id FROM runs ORDER BY created_at")]


async def handled_everything(bot: BotHarness) -> None:
    """Every update so far was fetched, and every handler has returned."""
    await until(
        lambda: (
            not bot.standin.pending_updates()
            and bot.app.update_queue.empty()
            and bot.app.update_processor.current_concurrent_updates == 0
        ),
        what="all updates handled",
    )


async def answered_in(bot: BotHarness, chat_id: int) -> list[str]:
    """Once the chat's only run has finished and its answer is shown: the chat's texts."""
    await bot.standin.wait_for(lambda: bot.query("SELECT status FROM runs") == [("completed",)])
    (answer,) = bot.query("SELECT answer FROM runs")[0]
    await bot.until_text(chat_id, answer)
    return bot.bot_texts(chat_id)


# -- 14: the buttons say what they do -------------------------------------------------------


@pytest.mark.parametrize(("text", "language"), [("cancel order A1003", EN), ("取消订单 A1003", ZH)])
async def test_14_prompt_buttons_are_labelled_by_outcome_from_the_steps_goal(
    bot: BotHarness, text: str, language: Language
) -> None:
    bot.standin.inject_message(DEMO, DEMO, text)
    prompt = await bot.buttons_message(DEMO)
    (run_id,) = run_ids(bot)
    labels = [b.text for b in prompt.buttons[0]]
    # The catalog's labels, named by the sentence above them too (issue 23 #1).
    expected = {EN: ["Yes, cancel A1003", "No, keep it"], ZH: ["确认取消", "不取消"]}
    assert labels == expected[language]
    assert all(label in prompt.text for label in labels)
    assert prompt_for(bot.standin, DEMO, run_id) == prompt


# -- 9: staff views only in a private chat with staff ---------------------------------------


async def test_9_staff_commands_in_a_group_show_nothing_to_the_group(bot: BotHarness) -> None:
    bot.standin.inject_message(DEMO, DEMO, "where is order A1001")
    await bot.standin.wait_for(lambda: bot.query("SELECT status FROM runs") == [("completed",)])
    (run_id,) = run_ids(bot)
    group = -1002
    for command in ("/runs", f"/run {run_id}", "/stats"):
        bot.standin.inject_message(group, STAFF, command)
    await bot.standin.wait_for(lambda: len(bot.bot_texts(group)) == 3)
    assert bot.bot_texts(group) == [say("staff_private_only", EN)] * 3

    # The same staff member in their private chat gets the page; its ▶ pressed from the
    # group (forged data, the page is not there) edits nothing and shows nothing.
    bot.standin.inject_message(STAFF, STAFF, "/runs")
    page = await bot.until_text(STAFF, run_id)
    shown = bot.standin.bot_messages(group)[0]
    query_id = bot.standin.press_button(group, shown.message_id, "sw:p:*:0", STAFF, forge=True)
    await bot.standin.wait_for(lambda: bool(bot.standin.callback_answers(query_id)))
    assert bot.standin.callback_answers(query_id)[0].text == say("staff_private_only", EN)
    assert bot.bot_texts(group) == [say("staff_private_only", EN)] * 3
    assert all(run_id not in text for text in bot.bot_texts(group))
    assert page.text is not None and run_id in page.text


# -- 5: lengths in UTF-16 code units after entity parsing -----------------------------------


@pytest.mark.parametrize(
    "request_text",
    [
        "where is order A1001 " + "😀" * 2030,  # 4,081 units in 2,051 characters
        "where is order A1001 " + "<" * 4000,  # 16,021 characters of HTML, 4,021 visible
    ],
)
async def test_5_a_staff_run_view_of_a_huge_request_arrives_whole_in_few_parts(
    bot: BotHarness, request_text: str
) -> None:
    """Split on lines: the header, the request line alone (it nearly fills a message), the
    rest. Counted in characters the emoji view was refused; counted in HTML it took 6."""
    bot.standin.inject_message(DEMO, DEMO, request_text)
    await bot.standin.wait_for(lambda: bot.query("SELECT status FROM runs") == [("completed",)])
    (run_id,) = run_ids(bot)
    bot.standin.inject_message(STAFF, STAFF, f"/run {run_id}")
    (answer,) = bot.query("SELECT answer FROM runs WHERE id = ?", run_id)[0]
    await bot.until_text(STAFF, answer)
    parts = bot.bot_texts(STAFF)
    assert bot.standin.calls("sendMessage", STAFF) and all(
        call.status == 200 for call in bot.standin.calls("sendMessage", STAFF)
    )
    assert all(utf16_len(part) <= MAX_TEXT_LENGTH for part in parts)
    assert len(parts) == 3
    assert request_text in "".join(parts).replace("\n", "")
    assert parts[-1].endswith(answer)


# -- 6: command lists per language, staff commands only in staff chats ----------------------


async def test_6_customers_see_their_commands_in_their_language_staff_see_more(
    standin: StandIn, tmp_path: Path
) -> None:
    standin.add_chat(STAFF, STAFF)  # a staff member who has talked to the bot before
    bot = await start_bot(standin, tmp_path / "bot.db")
    try:
        await standin.wait_for(lambda: bool(standin.commands(language_code="zh")))
        customer_en = [c["command"] for c in standin.commands()]
        customer_zh = standin.commands(language_code="zh")
        staff = [c["command"] for c in standin.commands({"type": "chat", "chat_id": STAFF})]
    finally:
        await bot.stop()
    assert customer_en == [c["command"] for c in customer_zh] == ["help"]
    assert [c["description"] for c in customer_zh] == [say("command_help", ZH)]
    assert [c["description"] for c in standin.commands()] == [say("command_help", EN)]
    assert set(staff) == {"help", "runs", "run", "stats"}
    # Nobody else is offered a staff command in any scope or language.
    everyone = [
        scope_commands
        for (scope, _), scope_commands in standin.state.commands.items()
        if json.loads(scope) != {"type": "chat", "chat_id": STAFF}
    ]
    assert all(c["command"] == "help" for listing in everyone for c in listing)


# -- 7: webhook mode never accepts unauthenticated updates ----------------------------------


def stepwise_process(
    cwd: Path,
    *args: str,
    env: dict[str, str] | None = None,
    merge_stderr: bool = False,
    process_group: int | None = None,
) -> subprocess.Popen[str]:
    """`stepwise ARGS` as a person starts it, in `cwd` (where it looks for `.env`)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))}
    return subprocess.Popen(
        [sys.executable, "-m", "stepwise", *args],
        cwd=cwd,
        env={**clean, "PYTHONPATH": str(ROOT), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
        text=True,
        process_group=process_group,
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_status(url: str) -> int | None:
    """The status of a GET (None while nothing answers): a process in the test's way."""
    try:
        return httpx.get(url, timeout=2).status_code
    except httpx.TransportError:
        return None


async def stop_process(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    """SIGINT, as Ctrl-C; the exit code and everything it printed."""
    process.send_signal(signal.SIGINT)
    await until(lambda: process.poll() is not None, within=20, what="exit after SIGINT")
    out, err = process.communicate()
    return process.returncode, out, err


async def test_7_webhook_without_a_secret_generates_one_and_refuses_unsigned_posts(
    standin: StandIn, tmp_path: Path
) -> None:
    standin.add_chat(DEMO, DEMO)
    port = free_port()
    env = {
        "TELEGRAM_BOT_TOKEN": standin.token,
        "TELEGRAM_API_BASE_URL": standin.base_url,
        "STEPWISE_DB": str(tmp_path / "bot.db"),
    }
    process = stepwise_process(
        tmp_path, "serve", "--webhook-url", "https://bot.example", "--port", str(port),
        "--staff-port", "0", env=env,
    )  # fmt: skip
    try:
        record = await standin.wait_for_call("setWebhook", timeout=20)
        secret = str(record.params.get("secret_token", ""))
        assert re.fullmatch(r"[A-Za-z0-9_-]{32,256}", secret)
        assert json.loads(str(record.params["allowed_updates"])) == HANDLED_UPDATES  # #1
        update = {
            "update_id": 1,
            "message": standin.inject_message(DEMO, DEMO, "/help"),
        }
        standin.state.updates.clear()  # delivered by POST below, not by getUpdates
        url = f"http://127.0.0.1:{port}/telegram"
        async with httpx.AsyncClient() as client:
            for headers in ({}, {"X-Telegram-Bot-Api-Secret-Token": "guess"}):
                refused = await client.post(url, json=update, headers=headers)
                assert refused.status_code == 403
            assert bot_texts(standin, DEMO) == []
            signed = {"X-Telegram-Bot-Api-Secret-Token": secret}
            assert (await client.post(url, json=update, headers=signed)).status_code == 200
        await standin.wait_for(lambda: bot_texts(standin, DEMO) == [say("help", EN)], timeout=10)
    finally:
        code, out, err = await stop_process(process)
    assert code == 0, err
    assert secret not in out + err  # used, never printed


@pytest.mark.parametrize("secret", ["has spaces", "ünïcode", "x" * 257, "semi;colon"])
def test_7_an_invalid_webhook_secret_stops_the_start_with_one_line(
    tmp_path: Path, secret: str
) -> None:
    env = {"TELEGRAM_BOT_TOKEN": DEFAULT_TOKEN, "STEPWISE_DB": str(tmp_path / "bot.db")}
    process = stepwise_process(
        tmp_path, "serve", "--webhook-url", "https://bot.example", "--webhook-secret", secret,
        env=env,
    )  # fmt: skip
    out, err = process.communicate(timeout=30)
    assert process.returncode == 2
    assert err.count("\n") == 1 and "--webhook-secret" in err and "A-Z a-z 0-9 _ -" in err
    assert secret not in err and out == ""
    assert not (tmp_path / "bot.db").exists()  # refused before anything was opened


# -- 8: a decision counts only on the prompt it was issued for ------------------------------


def cancellations(bot: BotHarness) -> int:
    return int(bot.query("SELECT count(*) FROM shop_cancellations")[0][0])


async def toast(bot: BotHarness, query_id: str) -> str | None:
    await bot.standin.wait_for(lambda: bool(bot.standin.callback_answers(query_id)))
    return bot.standin.callback_answers(query_id)[0].text


async def test_8_replaying_a_confirm_onto_another_message_is_stale_and_edits_nothing(
    bot: BotHarness,
) -> None:
    group = -1003
    bot.standin.inject_message(group, DEMO, "where is order A1001")
    await bot.standin.wait_for(lambda: bot.query("SELECT status FROM runs") == [("completed",)])
    bot.standin.inject_message(DEMO, DEMO, "cancel order A1003")
    prompt = await bot.buttons_message(DEMO)
    confirm = next(d for d in prompt.callback_data if d.startswith("sw:c:"))
    plan = bot.standin.bot_messages(DEMO)[0]
    in_group = bot.standin.bot_messages(group)[-1]
    before = {(DEMO, plan.message_id): plan, (group, in_group.message_id): in_group}

    for chat, target in ((DEMO, plan), (group, in_group)):
        query_id = bot.standin.press_button(chat, target.message_id, confirm, DEMO, forge=True)
        assert await toast(bot, query_id) == say("toast_invalid", EN)
    assert bot.query("SELECT status FROM runs ORDER BY created_at") == [
        ("completed",),
        ("paused",),
    ]
    assert cancellations(bot) == 0
    for (chat, message_id), shown in before.items():
        now = next(m for m in bot.standin.bot_messages(chat) if m.message_id == message_id)
        assert (now.text, now.history, now.buttons) == (shown.text, shown.history, shown.buttons)
    still = prompt_for(bot.standin, DEMO, run_ids(bot)[1])
    assert still is not None and still.buttons == prompt.buttons

    query_id = bot.standin.press_button(DEMO, prompt.message_id, confirm, DEMO)
    assert await toast(bot, query_id) == say("toast_confirmed", EN)
    await bot.standin.wait_for(lambda: cancellations(bot) == 1)


async def test_8_a_prompt_offered_again_after_a_restart_binds_to_the_new_message(
    standin: StandIn, tmp_path: Path
) -> None:
    db = tmp_path / "bot.db"
    first = await start_bot(standin, db)
    standin.inject_message(DEMO, DEMO, "cancel order A1003")
    old = await first.buttons_message(DEMO)
    await first.stop()
    # As if the bot died before it could record that the prompt was shown, a while ago
    # (a younger pause's prompt may still be on its way from a live process).
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM events WHERE kind = 'prompt_shown'")
        conn.execute("UPDATE runs SET paused_at = ?", (ts(utcnow() - timedelta(minutes=1)),))

    second = await start_bot(standin, db)
    try:
        start_recovery(second.runtime, second.app, reoffer=True)
        await standin.wait_for(
            lambda: len([m for m in standin.bot_messages(DEMO) if m.buttons]) == 2
        )
        new = standin.bot_messages(DEMO)[-1]
        assert new.message_id != old.message_id and new.callback_data == old.callback_data
        stale = press(standin, DEMO, old, approve=True, user=DEMO)
        assert await toast(second, stale) == say("toast_invalid", EN)
        assert cancellations(second) == 0
        fresh = press(standin, DEMO, new, approve=True, user=DEMO)
        assert await toast(second, fresh) == say("toast_confirmed", EN)
        await standin.wait_for(lambda: cancellations(second) == 1)
    finally:
        await second.stop()


# -- 12: signing out of the console survives a restart --------------------------------------

CONSOLE_TOKEN = "staff-token-for-tests-0123456789"


async def test_12_a_signed_out_cookie_stays_dead_after_a_console_restart(tmp_path: Path) -> None:
    db = tmp_path / "console.db"
    store = await SqliteRunStore.open(db)
    console = await serve_console(store, CONSOLE_TOKEN, port=0)
    try:
        async with httpx.AsyncClient(base_url=console.url) as client:
            assert (await sign_in(client, CONSOLE_TOKEN)).status_code == 303
            copied = client.cookies[SESSION_COOKIE]
            page = await client.get("/runs")
            csrf = re.search(
                r'action="/logout"[^>]*>\s*<input[^>]*name="csrf" value="([^"]+)"', page.text
            )
            assert csrf is not None
            assert (await client.post("/logout", data={"csrf": csrf[1]})).status_code == 303
    finally:
        await console.stop()
        await store.close()

    store = await SqliteRunStore.open(db)  # the restart: nothing kept in memory
    console = await serve_console(store, CONSOLE_TOKEN, port=0)
    try:
        async with httpx.AsyncClient(base_url=console.url) as client:
            client.cookies.set(SESSION_COOKIE, copied)
            assert (await client.get("/api/runs")).status_code == 401
            assert (await sign_in(client, CONSOLE_TOKEN)).status_code == 303  # a new one works
            assert (await client.get("/api/runs")).status_code == 200
    finally:
        await console.stop()
        await store.close()


# -- 1: an edit is never a new request --------------------------------------------------------

HANDLED_UPDATES = ["message", "edited_message", "callback_query"]


async def test_1_editing_a_message_starts_nothing_and_gets_a_polite_note(bot: BotHarness) -> None:
    sent = bot.standin.inject_message(DEMO, DEMO, "where is order A1001")
    answered = len(await answered_in(bot, DEMO))
    for text in ("cancel order A1003", "cancel order A1005"):  # edited, then edited again
        bot.standin.inject_edited_message(DEMO, DEMO, sent["message_id"], text)
    await bot.standin.wait_for(lambda: len(bot.bot_texts(DEMO)) == answered + 2)
    assert bot.bot_texts(DEMO)[answered:] == [say("edited", EN)] * 2
    notes = [m for m in bot.standin.bot_messages(DEMO)[answered:]]
    assert all(m.reply_to_message_id == sent["message_id"] for m in notes)
    assert bot.query("SELECT count(*) FROM runs") == [(1,)]
    assert not any(m.buttons for m in bot.standin.bot_messages(DEMO))


async def test_1_the_bot_asks_only_for_the_updates_it_handles(bot: BotHarness) -> None:
    await bot.standin.wait_for_call("getUpdates")
    polls = bot.standin.calls("getUpdates")
    assert all(json.loads(str(c.params["allowed_updates"])) == HANDLED_UPDATES for c in polls)


# -- 2: service messages and channel posts are not questions --------------------------------


async def test_2_service_messages_and_channel_posts_get_no_reply(bot: BotHarness) -> None:
    group, channel = -1004, -1_000_000_000_077
    bot.standin.inject_message(group, DEMO, "where is order A1001")
    answered = len(await answered_in(bot, group))
    bot.standin.inject_service_message(group, "new_chat_members", user_id=OTHER)
    bot.standin.inject_service_message(group, "new_chat_title", user_id=DEMO, title="Shop")
    bot.standin.inject_service_message(group, "left_chat_member", user_id=OTHER)
    bot.standin.inject_channel_post(channel, "where is order A1001")
    bot.standin.inject_channel_post(channel, photo=True)
    # The channel's post, forwarded by Telegram into its discussion group (this group).
    bot.standin.inject_update(
        "message",
        {
            "message_id": 900,
            "date": 1_800_000_000,
            "from": {"id": 777000, "is_bot": False, "first_name": "Telegram"},
            "chat": {"id": group, "type": "group", "title": "Shop"},
            "sender_chat": {"id": channel, "type": "channel", "title": "Shop news"},
            "is_automatic_forward": True,
            "text": "where is order A1005",
        },
    )
    # A sticker after them is answered: everything before it was seen and ignored.
    bot.standin.inject_message(group, DEMO, sticker=True)
    await bot.until_text(group, say("text_only", EN))
    await handled_everything(bot)
    assert len(bot.bot_texts(group)) == answered + 1
    assert channel not in bot.standin.state.chats or bot.bot_texts(channel) == []
    assert bot.query("SELECT count(*) FROM runs") == [(1,)]


# -- 3: forum topics: the answer comes in the customer's topic -----------------------------


async def test_3_plan_steps_prompt_and_answer_land_in_the_customers_topic(
    bot: BotHarness,
) -> None:
    forum = -1_000_000_000_123
    bot.standin.add_chat(forum, DEMO, is_forum=True, title="Shop support")
    topic = bot.standin.add_topic(forum, "My orders", DEMO)
    bot.standin.inject_message(forum, DEMO, "cancel order A1003", message_thread_id=topic)
    prompt = await bot.buttons_message(forum)
    press(bot.standin, forum, prompt, approve=True, user=DEMO)
    await bot.standin.wait_for(lambda: bot.query("SELECT status FROM runs") == [("completed",)])
    assert cancellations(bot) == 1
    (run_id,) = run_ids(bot)
    (answer,) = bot.query("SELECT answer FROM runs WHERE id = ?", run_id)[0]
    shown = await bot.until_text(forum, answer)
    messages = bot.standin.bot_messages(forum)
    assert len(messages) >= 4 and shown in messages  # plan, steps, prompt, answer
    assert {m.message_thread_id for m in messages} == {topic}


# -- 4: presses on messages the bot can no longer see --------------------------------------


async def test_4_paging_on_an_inaccessible_message_sends_the_page_anew(
    bot: BotHarness,
) -> None:
    for n in range(10):  # ten customers (one chat's flood budget would take half a minute)
        bot.standin.inject_message(30000 + n, 30000 + n, f"where is order A100{n % 5 + 1}")
    await bot.standin.wait_for(
        lambda: bot.query("SELECT count(*) FROM runs WHERE status != 'running'") == [(10,)],
        timeout=20,
    )
    bot.standin.inject_message(STAFF, STAFF, "/runs")
    page = await bot.until_text(STAFF, run_ids(bot)[-1])
    next_page = page.callback_data[0]
    # A page too old to be shown to the bot, then one that is gone: each press gets the
    # page it asked for as a new message; nothing is edited, nobody gets an apology.
    old = bot.standin.press_button(STAFF, page.message_id, next_page, STAFF, inaccessible=True)
    gone = bot.standin.press_button(STAFF, page.message_id + 50, next_page, STAFF, forge=True)
    await bot.standin.wait_for(lambda: len(bot.bot_texts(STAFF)) == 3)
    assert bot.standin.callback_answers(old) and bot.standin.callback_answers(gone)
    assert bot.standin.calls("editMessageText", STAFF) == []
    first, *fresh = bot.standin.bot_messages(STAFF)
    assert first.text == page.text and first.edit_count == 0
    assert [m.text for m in fresh] == [fresh[0].text] * 2 and fresh[0].text != page.text
    assert run_ids(bot)[1] in (fresh[0].text or "")  # the second page: older runs


async def test_4_a_confirm_on_an_inaccessible_prompt_still_counts(bot: BotHarness) -> None:
    bot.standin.inject_message(DEMO, DEMO, "cancel order A1003")
    prompt = await bot.buttons_message(DEMO)
    confirm = next(d for d in prompt.callback_data if d.startswith("sw:c:"))
    query_id = bot.standin.press_button(DEMO, prompt.message_id, confirm, DEMO, inaccessible=True)
    assert await toast(bot, query_id) == say("toast_confirmed", EN)
    await answered_in(bot, DEMO)
    assert cancellations(bot) == 1
    assert say("busy", EN) not in bot.bot_texts(DEMO)


# -- 15: plan and steps quietly, prompt and answer with a sound; typing while a step works ---


def silent(call: CallRecord) -> bool:
    return call.params.get("disable_notification") in (True, "true", "True")


async def test_15_only_the_prompt_and_the_answer_notify(bot: BotHarness) -> None:
    bot.standin.inject_message(DEMO, DEMO, "cancel order A1003")
    prompt = await bot.buttons_message(DEMO)
    press(bot.standin, DEMO, prompt, approve=True, user=DEMO)
    await answered_in(bot, DEMO)  # the run finished (the shop's cancel commits before it)
    assert cancellations(bot) == 1
    sends = bot.standin.calls("sendMessage", DEMO)
    shown = bot.standin.bot_messages(DEMO)
    by_kind = {
        "plan": [c for c in sends if c.result["message_id"] == shown[0].message_id],
        "prompt": [c for c in sends if "reply_markup" in c.params],
        "answer": [c for c in sends if c.result["message_id"] == shown[-1].message_id],
    }
    steps = [c for c in sends if not any(c in calls for calls in by_kind.values())]
    assert all(len(calls) == 1 for calls in by_kind.values()) and len(steps) == 1
    assert silent(by_kind["plan"][0]) and silent(steps[0])
    assert not silent(by_kind["prompt"][0]) and not silent(by_kind["answer"][0])


async def test_15_a_step_still_working_after_a_second_shows_typing_until_it_is_done(
    standin: StandIn, tmp_path: Path
) -> None:
    bot = await start_bot(
        standin, tmp_path / "bot.db", typing=Typing(after_s=0.3, every_s=0.4),
        STEPWISE_SHOP_LATENCY_MS="1500",
    )  # fmt: skip
    try:
        bot.standin.inject_message(DEMO, DEMO, "where is order A1001")
        await answered_in(bot, DEMO)
        typed = bot.standin.calls("sendChatAction", DEMO)
        assert [c.params["action"] for c in typed] == ["typing"] * len(typed)
        assert 3 <= len(typed) <= 4  # at 0.3 s, then every 0.4 s while the 1.5 s step ran
        finished = bot.standin.calls("sendMessage", DEMO)[-1]
        assert all(c.started < finished.started for c in typed)  # none after the step
    finally:
        await bot.stop()


async def test_15_a_quick_step_shows_no_typing(bot: BotHarness) -> None:
    bot.standin.inject_message(DEMO, DEMO, "where is order A1001")
    await answered_in(bot, DEMO)
    assert bot.standin.calls("sendChatAction", DEMO) == []


# -- 17: `make run` decides from the settings the app reads, .env included ------------------


async def test_17_run_serves_telegram_when_the_token_is_only_in_dot_env(
    standin: StandIn, tmp_path: Path
) -> None:
    (tmp_path / ".env").write_text(
        f"TELEGRAM_BOT_TOKEN={standin.token}\nTELEGRAM_API_BASE_URL={standin.base_url}\n"
        f"STEPWISE_DB={tmp_path / 'bot.db'}\n"
    )
    process = stepwise_process(tmp_path, "run", "--staff-port", "0")
    try:
        await standin.wait_for(lambda: standin.active_polls > 0, timeout=20)  # serving
        standin.inject_message(DEMO, DEMO, "/help")
        await standin.wait_for(lambda: bot_texts(standin, DEMO) == [say("help", EN)], timeout=10)
    finally:
        code, out, err = await stop_process(process)
    assert code == 0, err
    assert "stepwise demo" not in out


async def test_17_run_without_a_token_is_the_demo_and_takes_its_ports(tmp_path: Path) -> None:
    port = free_port()
    env = {"STEPWISE_DB": str(tmp_path / "demo.db")}
    process = stepwise_process(
        tmp_path, "run", "--chat-port", str(port), "--staff-port", "0", env=env
    )
    try:
        await until(lambda: http_status(f"http://127.0.0.1:{port}/") == 200, what="chat page")
    finally:
        code, out, err = await stop_process(process)
    assert code == 0, err
    assert f"http://127.0.0.1:{port}/" in out and "Traceback" not in err


def test_17_make_run_calls_stepwise_run_with_the_args() -> None:
    dry = subprocess.run(
        ["make", "--no-print-directory", "-n", "run", 'ARGS=--chat-port 9000 --staff-port 9001'],
        cwd=ROOT, capture_output=True, text=True, timeout=30, check=True,
        # Under `make test` this is a sub-make: without the parent's flags it prints only
        # the recipe, as it does from a shell.
        env={k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")},
    )  # fmt: skip
    assert (
        dry.stdout.strip().splitlines()[-1]
        == ".venv/bin/stepwise run --chat-port 9000 --staff-port 9001"
    )


# -- 19: Ctrl-C stops cleanly; what it interrupted is finished by the next start ------------


async def test_19_a_run_interrupted_by_ctrl_c_is_finished_when_serve_starts(
    standin: StandIn, tmp_path: Path
) -> None:
    db = tmp_path / "bot.db"
    standin.add_chat(DEMO, DEMO)
    env = {"STEPWISE_DB": str(db), "STEPWISE_SHOP_LATENCY_MS": "30000"}
    ask = stepwise_process(tmp_path, "ask", "where is order A1001", "--user", str(DEMO), env=env)
    await until(lambda: db.exists() and query(db, "SELECT 1 FROM steps WHERE status = 'running'"))
    code, _, err = await stop_process(ask)
    assert code == 130 and "Traceback" not in err
    assert query(db, "SELECT status FROM runs") == [("running",)]

    env = {
        "STEPWISE_DB": str(db),
        "TELEGRAM_BOT_TOKEN": standin.token,
        "TELEGRAM_API_BASE_URL": standin.base_url,
    }
    serve = stepwise_process(tmp_path, "serve", "--staff-port", "0", env=env)
    try:
        await until(lambda: query(db, "SELECT status FROM runs") == [("completed",)], within=30)
        (answer,) = query(db, "SELECT answer FROM runs")[0]
        await standin.wait_for(lambda: answer in bot_texts(standin, DEMO), timeout=10)
    finally:
        code, _, err = await stop_process(serve)
    assert code == 0, err


def test_19_ctrl_c_with_the_output_piped_into_a_dying_tee_stops_the_demo_and_frees_its_ports(
    tmp_path: Path,
) -> None:
    """`make run 2>&1 | tee log`, then Ctrl-C: SIGINT to the whole group, tee dies first."""
    chat_port, staff_port = free_port(), free_port()
    log = tmp_path / "log"
    demo = stepwise_process(
        tmp_path, "demo", "--chat-port", str(chat_port), "--staff-port", str(staff_port),
        env={"STEPWISE_DB": str(tmp_path / "demo.db")}, merge_stderr=True, process_group=0,
    )  # fmt: skip
    assert demo.stdout is not None
    tee = subprocess.Popen(
        ["tee", str(log)], stdin=demo.stdout, stdout=subprocess.DEVNULL, process_group=demo.pid
    )
    demo.stdout.close()  # only tee reads the demo's output now
    try:
        until_sync(lambda: log.exists() and "Press Ctrl-C" in log.read_text(), what="banner")
        tee.send_signal(signal.SIGINT)
        tee.wait(timeout=10)
        os.killpg(demo.pid, signal.SIGINT)
        until_sync(lambda: demo.poll() is not None, within=20, what="the demo stopped")
    finally:
        for process in (demo, tee):
            if process.poll() is None:
                process.kill()
                process.wait()
    assert demo.returncode == 0
    for port in (chat_port, staff_port):
        assert http_status(f"http://127.0.0.1:{port}/") is None  # nothing listens any more
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))  # and the port is free to use again


async def test_8_a_prompt_shown_before_the_upgrade_is_offered_again_and_bound(
    standin: StandIn, tmp_path: Path
) -> None:
    """A paused run from before migration 4 has a `prompt_shown` event but no binding:
    the next start shows its prompt again, bound, instead of leaving it dead."""
    db = tmp_path / "bot.db"
    first = await start_bot(standin, db)
    standin.inject_message(DEMO, DEMO, "cancel order A1003")
    old = await first.buttons_message(DEMO)
    await first.stop()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET prompt_chat_id = NULL, prompt_message_id = NULL")
        conn.execute("UPDATE runs SET paused_at = ?", (ts(utcnow() - timedelta(minutes=1)),))

    second = await start_bot(standin, db)
    try:
        start_recovery(second.runtime, second.app, reoffer=True)
        await standin.wait_for(
            lambda: len([m for m in standin.bot_messages(DEMO) if m.buttons]) == 2
        )
        new = standin.bot_messages(DEMO)[-1]
        assert new.message_id != old.message_id
        fresh = press(standin, DEMO, new, approve=True, user=DEMO)
        assert await toast(second, fresh) == say("toast_confirmed", EN)
        await standin.wait_for(lambda: cancellations(second) == 1)
    finally:
        await second.stop()


@pytest.mark.standin(flood=FloodLimits())
async def test_15_a_fast_run_in_one_chat_stays_under_telegrams_per_chat_limit(
    bot: BotHarness,
) -> None:
    """The stand-in's realistic limit (a burst of 3, then about 1/s per chat): four quick
    questions and a cancellation in one chat, every message delivered, not one 429."""
    assert bot.standin.state.limits == FloodLimits()  # the realistic defaults
    for order in ("A1001", "A1002", "A1004", "A1005"):
        bot.standin.inject_message(DEMO, DEMO, f"where is order {order}")
    bot.standin.inject_message(DEMO, DEMO, "cancel order A1003")
    prompt = await bot.buttons_message(DEMO, within=30)
    press(bot.standin, DEMO, prompt, approve=True, user=DEMO)
    await bot.standin.wait_for(
        lambda: bot.query("SELECT count(*) FROM runs WHERE status = 'completed'") == [(5,)],
        timeout=30,
    )
    answers = [a for (a,) in bot.query("SELECT answer FROM runs ORDER BY created_at")]
    await bot.standin.wait_for(lambda: all(a in bot.bot_texts(DEMO) for a in answers), timeout=30)
    sent = [c for c in bot.standin.calls(chat_id=DEMO) if counts_as_message(c.method)]
    assert len(sent) >= 16  # plans, steps, prompt, answers and the decision's edits
    assert bot.standin.flood_refusals(DEMO) == 0 and bot.standin.served_429 == 0


def test_15_the_bots_pace_is_the_stand_ins_realistic_limit() -> None:
    limits = FloodLimits()
    assert (limits.per_chat, limits.per_chat_interval) == (CHAT_BURST, CHAT_INTERVAL_S)


async def test_7_webhook_mode_end_to_end_the_stand_in_posting_with_the_generated_secret(
    standin: StandIn, tmp_path: Path
) -> None:
    port = free_port()
    env = {
        "TELEGRAM_BOT_TOKEN": standin.token,
        "TELEGRAM_API_BASE_URL": standin.base_url,
        "STEPWISE_DB": str(tmp_path / "bot.db"),
    }
    url = f"http://127.0.0.1:{port}"  # Telegram allows plain http to loopback only
    process = stepwise_process(
        tmp_path, "serve", "--webhook-url", url, "--port", str(port), "--staff-port", "0",
        env=env,
    )  # fmt: skip
    try:
        await standin.wait_for_call("setWebhook", timeout=20)
        standin.inject_channel_post(-1_000_000_000_077, "not for the bot")  # not asked for
        standin.inject_message(DEMO, DEMO, "cancel order A1003")
        prompt = await first_buttons(standin, DEMO)
        press(standin, DEMO, prompt, approve=True, user=DEMO)
        db = tmp_path / "bot.db"
        await until(lambda: query(db, "SELECT status FROM runs") == [("completed",)], within=30)
        (answer,) = query(db, "SELECT answer FROM runs")[0]
        await standin.wait_for(lambda: answer in bot_texts(standin, DEMO), timeout=20)
        assert query(db, "SELECT count(*) FROM shop_cancellations") == [(1,)]
        assert standin.calls("getUpdates") == []  # every update came by POST
        assert bot_texts(standin, -1_000_000_000_077) == []
    finally:
        code, _, err = await stop_process(process)
    assert code == 0, err


async def first_buttons(standin: StandIn, chat_id: int) -> ShownMessage:
    await standin.wait_for(lambda: any(m.buttons for m in standin.bot_messages(chat_id)), 20)
    return next(m for m in standin.bot_messages(chat_id) if m.buttons)
