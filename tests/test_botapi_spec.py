"""The vendored Bot API specification and its checker (standin/botapi, tests/botapi).

The checker is what makes the stand-in, and every request the bot sends in the suite,
answer to Telegram's documented API rather than to our own idea of it; these tests pin
what it accepts and refuses, on requests encoded the ways clients encode them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import aiohttp
import pytest

from standin import DEFAULT_TOKEN, StandIn
from standin.botapi import _enum
from tests.botapi import (
    SPEC_PATH,
    call_problems,
    check_call,
    check_object,
    check_result,
    spec,
    spec_problems,
    update_kinds,
    version,
)

BOT = {"id": 1, "is_bot": True, "first_name": "Bot"}
CHAT = {"id": 42, "type": "private", "first_name": "Ana"}
BUTTONS = json.dumps({"inline_keyboard": [[{"text": "Yes", "callback_data": "y"}]]})


def test_the_vendored_spec_names_its_version_and_licence() -> None:
    assert version() == "Bot API 10.1"
    assert SPEC_PATH.with_name("LICENSE").read_text().startswith("MIT License")
    assert "sendMessage" in spec()["methods"] and "Message" in spec()["types"]
    assert {"message", "edited_message", "callback_query", "my_chat_member"} <= update_kinds()
    assert "update_id" not in update_kinds()


def test_a_form_encoded_request_as_clients_send_it_conforms() -> None:
    form = {
        "chat_id": "42",
        "text": "hi",
        "parse_mode": "HTML",
        "disable_notification": "true",
        "reply_markup": BUTTONS,
        "message_thread_id": "7",
    }
    assert check_call("sendMessage", form) == []
    assert check_call("sendmessage", {"chat_id": "@shop", "text": "hi"}) == []  # any case


def test_a_json_request_with_structured_values_conforms() -> None:
    body = {"chat_id": 42, "text": 5, "reply_markup": json.loads(BUTTONS)}
    assert check_call("sendMessage", body) == []  # Telegram reads a top-level 5 as "5"


@pytest.mark.parametrize(
    ("method", "params", "problem"),
    [
        ("sendMessage", {"chat_id": 1}, "sendMessage.text: required but missing"),
        ("sendMessage", {"chat_id": 1, "text": ""}, "sendMessage.text: required but missing"),
        ("sendMessage", {"chat_id": 1, "text": "x", "colour": "red"}, "not a parameter"),
        ("sendMessage", {"chat_id": [1], "text": "x"}, "expected Integer or String"),
        ("sendMessage", {"chat_id": 1, "text": "x", "parse_mode": "bbcode"}, "'bbcode'"),
        (
            "sendMessage",
            {"chat_id": 1, "text": "x", "disable_notification": "maybe"},
            "expected Boolean",
        ),
        ("sendChatAction", {"chat_id": 1, "action": "dancing"}, "'dancing' is not one of"),
        ("getUpdates", {"allowed_updates": '["mesage"]'}, "'mesage' is not one of"),
        ("getUpdates", {"timeout": "0.5"}, "expected Integer"),
        ("noSuchMethod", {}, "no such Bot API method"),
    ],
)
def test_requests_telegram_refuses_or_ignores(
    method: str, params: dict[str, object], problem: str
) -> None:
    problems = check_call(method, params)
    assert len(problems) == 1 and problem in problems[0], problems


def test_values_inside_json_objects_are_typed_strictly() -> None:
    markup = json.dumps({"inline_keyboard": [[{"text": 5, "callback_data": "y"}]]})
    (problem,) = call_problems("sendMessage", {"chat_id": 1, "text": "x", "reply_markup": markup})
    assert problem.where == "sendMessage.reply_markup.inline_keyboard[0][0].text"
    assert (problem.kind, problem.parameter, problem.field) == ("type", "reply_markup", "text")
    assert problem.owner == "InlineKeyboardButton" and problem.nested


def test_parse_mode_is_case_insensitive_and_an_empty_webhook_url_removes_it() -> None:
    assert check_call("sendMessage", {"chat_id": 1, "text": "x", "parse_mode": "html"}) == []
    assert check_call("setWebhook", {"url": ""}) == []
    assert check_call("setWebhook", {}) == ["setWebhook.url: required but missing"]


def test_objects_are_checked_field_by_field() -> None:
    message = {"message_id": 1, "date": 1, "chat": CHAT, "text": "hi", "from": BOT}
    assert check_object("Message", message) == []
    assert check_object("Message", {**message, "colour": "red"}) == [
        "Message.colour: not a field of Message"
    ]
    assert check_object("Message", {"message_id": 1, "chat": CHAT}) == [
        "Message.date: required field of Message missing"
    ]
    assert check_object("Chat", {**CHAT, "type": "room"})[0].startswith("Chat.type: 'room'")
    assert check_object("User", {**BOT, "id": True}) == ["User.id: expected Integer, got True"]


def test_unions_pick_the_member_their_type_or_status_names() -> None:
    gone = {"chat": CHAT, "message_id": 3, "date": 0}
    assert check_object("MaybeInaccessibleMessage", gone) == []
    assert check_object("BotCommandScope", {"type": "chat"}) == [
        "BotCommandScope.chat_id: required field of BotCommandScopeChat missing"
    ]
    assert check_object("ChatMember", {"status": "kicked", "user": BOT}) == [
        "ChatMember.until_date: required field of ChatMemberBanned missing"
    ]
    assert check_object("ChatMember", {"status": "member", "user": BOT}) == []


def test_results_are_checked_against_the_documented_return_type() -> None:
    message = {"message_id": 1, "date": 1, "chat": CHAT}
    assert check_result("sendMessage", message) == []
    assert check_result("editMessageText", True) == []  # inline messages answer True
    assert check_result("sendMessage", True) != []
    assert check_result("getUpdates", [{"update_id": 1, "message": message}]) == []
    assert check_result("getUpdates", [{"update_id": 1, "mesage": message}]) == [
        "getUpdates->result[0].mesage: not a field of Update"
    ]


def test_closed_value_sets_are_read_from_the_prose() -> None:
    assert _enum("Chat", "type") == {"private", "group", "supergroup", "channel"}
    assert {"bold", "text_link", "date_time"} <= (_enum("MessageEntity", "type") or set())
    assert _enum("RichBlockListItem", "type") == {"a", "A", "i", "I", "1"}  # case matters
    assert _enum("InlineQueryResultMpeg4Gif", "type") == {"mpeg4_gif"}
    assert _enum("BotCommandScopeChatMember", "type") == {"chat_member"}
    assert _enum("Sticker", "type") == {"regular", "mask", "custom_emoji"}
    assert _enum("Message", "text") is None  # free text


@pytest.fixture
async def server() -> AsyncIterator[StandIn]:
    async with StandIn() as running:
        yield running


async def test_a_test_is_checked_call_by_call_and_only_once(server: StandIn) -> None:
    api = f"{server.base_url}{DEFAULT_TOKEN}"
    server.add_chat(42)
    async with aiohttp.ClientSession() as http:
        await http.post(f"{api}/sendMessage", json={"chat_id": 42, "text": "fine"})
        await http.post(f"{api}/sendMessage", json={"chat_id": 42, "text": "x", "colour": "red"})
        await http.post(f"{api}/getUpdates", json={})
    problems = spec_problems(server)
    assert problems == ["call #2 sendMessage: sendMessage.colour: not a parameter of sendMessage"]
    assert spec_problems(server) == []  # already reported
    assert spec_problems(server, requests=False) == []


async def test_every_update_is_checked_once_whether_polled_or_still_queued(
    server: StandIn,
) -> None:
    server.inject_message(42, text="fine")
    server.state.enqueue("message", {"message_id": 2, "chat": {"id": 42, "type": "private"}})
    assert spec_problems(server) == [
        "queued update: Update.message.date: required field of Message missing"
    ]
    async with aiohttp.ClientSession() as http:
        await http.post(f"{server.base_url}{DEFAULT_TOKEN}/getUpdates", json={})
    assert spec_problems(server) == []  # delivered now, but already reported
