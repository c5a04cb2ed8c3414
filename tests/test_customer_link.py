"""Linking a customer: the bot's side of `/start <token>` (issue 22 item 1).

Over real HTTP both ways: the production bot (`start_bot`, `STEPWISE_TOOLS` =
examples/woocommerce.toml pointed at the WooCommerce stand-in, whose link plugin issues
single-use tokens) long-polls the Bot API stand-in. An unlinked customer asks for their
orders and is told how to link, presses the shop's deep link, is linked, and asks again.
A double tap, a token used by someone else, an expired one, a forged payload and a shop
that is down each get their one answer; the token is nowhere in the database or the logs.
Also the `claim` config checks and the lookup cache dropped after a link.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest
from telegram import Update

from agent_core.http import customer_directory, load_tools_config
from agent_core.http.config import ToolsConfigError
from agent_core.http.customer import Customer, LinkOutcome
from bot.link import REDACTED_MARK, link_token, stored_update, was_redacted
from standin import StandIn
from tests import test_customer_identity as identity
from tests import test_http_woocommerce as woo_tests
from tests.harness import start_bot

woo = woo_tests.woo

NEW = 30003  # a Telegram user the shop does not know yet; shop customer 9 at the end
FRIEND = 30004  # someone the link was forwarded to
LATE = 30005
ZH_USER = 30006
SHOP_ID = 9

LINKED_EN = "Your Telegram is now linked to your shop account. Ask me about your orders."
REFUSED_EN = "That link has expired or was already used. Make a new one on your account page."
DOWN_EN = "I couldn't reach the shop just now; please press the link again in a minute"
HELP_EN = "Hi! I'm the customer-service assistant."


def db_texts(db: Path) -> str:
    """Every value of every table of the database, as text."""
    conn = sqlite3.connect(db)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        out = []
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                out.append(repr(row))
        return "\n".join(out)
    finally:
        conn.close()


async def test_a_customer_links_by_the_deep_link_and_the_token_is_kept_nowhere(
    woo: woo_tests.Woo,
    standin: StandIn,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for name in ("", "httpx", "httpcore", "telegram", "agent_core", "bot", "stepwise"):
        caplog.set_level(logging.DEBUG, logger=name or None)
    woo.orders[4001] = woo_tests.woo_order(4001, "processing", None, "88.00")
    woo.orders[4001]["customer_id"] = SHOP_ID
    tools, intents = identity.files(tmp_path, woo.base)
    monkeypatch.setenv("WOO_BASIC_AUTH", woo_tests.BASIC)
    db = tmp_path / "bot.db"
    h = await start_bot(
        standin,
        db,
        STEPWISE_TOOLS=str(tools),
        STEPWISE_INTENTS=str(intents),
        STEPWISE_ORDER_PATTERN=identity.PATTERN,
    )
    tokens: list[str] = []
    try:
        # Not linked: told how to link, never asked for an order number.
        standin.inject_message(NEW, NEW, "show my orders", first_name="Wen")
        await h.until_text(NEW, "Link Telegram")

        token = woo.issue_link(SHOP_ID)
        tokens.append(token)
        standin.inject_message(NEW, NEW, f"/start {token}", first_name="Wen")
        await h.until_text(NEW, LINKED_EN)
        claims = [s for s in woo.seen if s[1] == "/wp-json/stepwise/v1/link"]
        assert len(claims) == 1
        _, _, headers, body = claims[0]
        assert body == {"token": token, "telegram_user_id": str(NEW)}
        assert headers["Authorization"] == f"Basic {woo_tests.BASIC}"

        standin.inject_message(NEW, NEW, "show my orders", first_name="Wen")
        await h.until_text(NEW, "Order 4001: paid, being prepared (88.00)")

        # A double tap: the shop refuses the used token, the bot finds the user linked.
        standin.inject_message(NEW, NEW, f"/start {token}", first_name="Wen")
        await standin.wait_for(lambda: h.bot_texts(NEW).count(LINKED_EN) == 2, timeout=10)
        assert not any("expired" in t for t in h.bot_texts(NEW))

        # The same token forwarded to someone else: used, refused.
        standin.inject_message(FRIEND, FRIEND, f"/start {token}", first_name="Fay")
        await h.until_text(FRIEND, REFUSED_EN)
        # A token whose time ran out (the plugin's clock), then the explicit expiry.
        late = woo.issue_link(SHOP_ID, ttl_s=60)
        woo.now += 61
        gone = woo.issue_link(SHOP_ID)
        woo.expire(gone)
        tokens += [late, gone]
        for expired in (late, gone):
            standin.inject_message(FRIEND, FRIEND, f"/start {expired}", first_name="Fay")
        await standin.wait_for(lambda: h.bot_texts(FRIEND).count(REFUSED_EN) == 3, timeout=10)
        assert LINKED_EN not in h.bot_texts(FRIEND)

        # Forged payloads (not Telegram's deep-link alphabet, too long): the plain /start.
        claimed = len([s for s in woo.seen if s[1] == "/wp-json/stepwise/v1/link"])
        for forged in ("abc$%^&", "x" * 65, "two words"):
            standin.inject_message(LATE, LATE, f"/start {forged}", first_name="Lu")
        await standin.wait_for(
            lambda: sum(HELP_EN in t for t in h.bot_texts(LATE)) == 3, timeout=10
        )
        assert len([s for s in woo.seen if s[1] == "/wp-json/stepwise/v1/link"]) == claimed

        # The shop is down: asked to press again; the token is still good afterwards.
        woo.link_down = True
        later = woo.issue_link(10)
        tokens.append(later)
        standin.inject_message(LATE, LATE, f"/start {later}", first_name="Lu")
        await h.until_text(LATE, DOWN_EN)
        woo.link_down = False
        standin.inject_message(LATE, LATE, f"/start {later}", first_name="Lu")
        await h.until_text(LATE, LINKED_EN)

        # In the customer's language.
        zh = woo.issue_link(11)
        tokens.append(zh)
        standin.add_chat(ZH_USER, ZH_USER, first_name="Li", language_code="zh-hans")
        standin.inject_message(
            ZH_USER, ZH_USER, f"/start {zh}", first_name="Li", language_code="zh-hans"
        )
        await h.until_text(ZH_USER, "你的 Telegram 已关联到你在本店的账号。")
    finally:
        await h.stop()

    stored = db_texts(db)
    assert "/start [link]" in stored  # the inbox kept the updates, without their tokens
    logs = caplog.text
    assert "customer link: POST 200" in logs
    for token in tokens:
        assert token not in stored, "a link token was stored"
        assert token not in logs, "a link token was logged"


async def test_without_a_claim_start_with_a_token_is_the_plain_start(
    woo: woo_tests.Woo, standin: StandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools, _ = identity.files(tmp_path, woo.base)
    text = tools.read_text(encoding="utf-8")
    without = "\n".join(line for line in text.splitlines() if not line.startswith("claim = "))
    tools.write_text(without, encoding="utf-8")
    monkeypatch.setenv("WOO_BASIC_AUTH", woo_tests.BASIC)
    h = await start_bot(standin, tmp_path / "bot.db", STEPWISE_TOOLS=str(tools))
    try:
        token = woo.issue_link(SHOP_ID)
        standin.inject_message(NEW, NEW, f"/start {token}", first_name="Wen")
        await h.until_text(NEW, HELP_EN)
    finally:
        await h.stop()
    assert not any(s[1] == "/wp-json/stepwise/v1/link" for s in woo.seen)


async def test_a_claim_drops_the_cached_customer_and_reads_an_unreachable_shop(
    woo: woo_tests.Woo, tmp_path: Path
) -> None:
    config = woo_tests.config_for(woo, tmp_path)
    async with httpx.AsyncClient() as client:
        directory = customer_directory(config, client)
        assert directory is not None and directory.can_claim
        directory.cache.put(NEW, Customer(id="3"))  # linked once to another account
        token = woo.issue_link(SHOP_ID)
        assert await directory.claim(NEW, token, "t1") is LinkOutcome.LINKED
        assert directory.cache.get(NEW) is None  # the next question looks them up afresh
        assert await directory.claim(FRIEND, "never-issued", "t2") is LinkOutcome.REFUSED
        woo.key = "revoked"  # the shop refuses our credentials: nothing about the token
        assert await directory.claim(FRIEND, woo.issue_link(10), "t3") is LinkOutcome.UNAVAILABLE

        dead = woo_tests.config_for(woo, tmp_path, base="http://127.0.0.1:9")
        nowhere = customer_directory(dead, client)
        assert nowhere is not None
        assert await nowhere.claim(NEW, token, "t4") is LinkOutcome.UNAVAILABLE


CLAIM = 'claim = { url = "https://shop.example/wp-json/stepwise/v1/link", body = { token = "{token}", telegram_user_id = "{telegram_user_id}" } }'


@pytest.mark.parametrize(
    ("claim", "said"),
    [
        (
            'claim = { url = "https://shop.example/link/{token}", body = { token = "{token}" } }',
            "claim.url: an absolute http(s) url without placeholders (the token goes in the body)",
        ),
        (
            'claim = { url = "https://shop.example/link", body = { user = "{telegram_user_id}" } }',
            "the shop needs the token: put {token} in it",
        ),
        (
            'claim = { url = "https://shop.example/link", body = { t = "{token}", e = "{email}" } }',
            "body: {email} is not a placeholder of the claim ({token}, {telegram_user_id})",
        ),
        (
            'claim = { url = "https://shop.example/link", body = { token = "{token}" }, method = "GET" }',
            "method",
        ),
        ('claim = { url = "/link", body = { token = "{token}" } }', "claim.url"),
    ],
)
def test_the_claim_is_checked_at_load(tmp_path: Path, claim: str, said: str) -> None:
    text = (woo_tests.ROOT / "examples" / "woocommerce.toml").read_text(encoding="utf-8")
    assert CLAIM in text
    path = tmp_path / "tools.toml"
    path.write_text(text.replace(CLAIM, claim), encoding="utf-8")
    with pytest.raises(ToolsConfigError) as refused:
        load_tools_config(path, env={"WOO_BASIC_AUTH": woo_tests.BASIC})
    assert "[customer]" in str(refused.value) and said in str(refused.value), refused.value


def test_query_string_keys_need_an_https_claim(tmp_path: Path) -> None:
    text = (woo_tests.ROOT / "examples" / "woocommerce.toml").read_text(encoding="utf-8")
    keys = 'query = { consumer_key = "${K}", consumer_secret = "${S}" }'
    text = text.replace('headers = { Authorization = "Basic ${WOO_BASIC_AUTH}" }', keys)
    path = tmp_path / "tools.toml"
    path.write_text(text.replace(CLAIM, CLAIM.replace("https://", "http://")), encoding="utf-8")
    with pytest.raises(ToolsConfigError, match=r"only sent over https://.*\[customer\] uses http"):
        load_tools_config(path, env={"K": "ck_123456789", "S": "cs_123456789"})
    path.write_text(text, encoding="utf-8")
    assert load_tools_config(path, env={"K": "ck_123456789", "S": "cs_123456789"}).customer


def _update(text: str, *, chat_type: str = "private", edited: bool = False) -> Update:
    entities: list[dict[str, Any]] = []
    if text.startswith("/"):
        word = text.split()[0]
        entities = [{"type": "bot_command", "offset": 0, "length": len(word)}]
    message = {
        "message_id": 5,
        "date": 1_700_000_000,
        "chat": {"id": 42 if chat_type == "private" else -100, "type": chat_type},
        "from": {"id": 42, "is_bot": False, "first_name": "Wen"},
        "text": text,
        "entities": entities,
    }
    if edited:
        message["edit_date"] = 1_700_000_001
    return Update.de_json({"update_id": 1, ("edited_message" if edited else "message"): message})


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("/start AbC_12-x", "AbC_12-x"),
        ("/start@our_bot AbC_12-x", "AbC_12-x"),
        ("/start", None),
        ("/start human-r1", None),  # the handoff's own link
        ("/start human", None),
        ("/start abc$", None),
        ("/start " + "x" * 65, None),
        ("/start a b", None),
        ("/help AbC", None),
    ],
)
def test_what_is_a_link_token(text: str, token: str | None) -> None:
    update = _update(text)
    assert update.message is not None
    assert link_token(update.message) == token


def test_the_inbox_stores_a_start_without_its_payload() -> None:
    import json

    token = "Zq3-" + "k" * 40
    for update in (_update(f"/start {token}"), _update(f"/start {token}", edited=True)):
        body = stored_update(update)
        assert token not in body
        stored = json.loads(body)
        kind = "message" if update.message is not None else "edited_message"
        assert stored[kind]["text"] == "/start [link]"
        assert stored[kind]["entities"] == [{"type": "bot_command", "offset": 0, "length": 6}]
        replayed = Update.de_json(stored, None)
        # Only a new message in a private chat was a link: its replay knows it.
        assert was_redacted(replayed) is (kind == "message")
    assert token not in stored_update(_update(f"/start {token}!"))  # forged: not kept either
    assert REDACTED_MARK not in stored_update(_update(f"/start {token}!"))
    assert stored_update(_update("/start human-r1")) == _update("/start human-r1").to_json()
    assert stored_update(_update("where is 1001")) == _update("where is 1001").to_json()


async def test_a_link_replayed_after_a_crash_has_no_token_and_says_what_it_can(
    woo: woo_tests.Woo, standin: StandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An update stored (acknowledged) by a process that died before handling it: the
    inbox kept it without its token, so the replay cannot claim; it says "linked" if the
    shop has the user linked, else asks for the link to be pressed again."""
    tools, _ = identity.files(tmp_path, woo.base)
    monkeypatch.setenv("WOO_BASIC_AUTH", woo_tests.BASIC)
    db = tmp_path / "bot.db"
    h = await start_bot(standin, db, STEPWISE_TOOLS=str(tools))
    try:
        token = woo.issue_link(SHOP_ID)
        standin.inject_message(NEW, NEW, f"/start {token}", first_name="Wen")
        await h.until_text(NEW, LINKED_EN)
        (body,) = h.query("SELECT body FROM inbox")[0]
        assert token not in body and REDACTED_MARK in body
        standin.add_chat(FRIEND, FRIEND, first_name="Fay")
        for update_id, user in ((9001, NEW), (9002, FRIEND)):
            orphan = body.replace(f": {NEW}", f": {user}").replace(
                '"update_id": 1', f'"update_id": {update_id}', 1
            )
            assert f'"update_id": {update_id}' in orphan
            h.query_write(
                "INSERT INTO inbox (update_id, body, received_at, owner, lease_until)"
                " VALUES (?, ?, 0, 'elsewhere:1:dead00', 0)",
                update_id,
                orphan,
            )
        await standin.wait_for(lambda: h.bot_texts(NEW).count(LINKED_EN) == 2, timeout=10)
        await h.until_text(FRIEND, "Linking didn't finish; please press the link")
    finally:
        await h.stop()
    claims = [s for s in woo.seen if s[1] == "/wp-json/stepwise/v1/link"]
    assert len(claims) == 1  # the replays never claimed anything
