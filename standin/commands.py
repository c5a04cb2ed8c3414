"""Bot command lists: Telegram's limits, and one canonical key per (scope, language).

A bot can set a different command list for each scope (everyone, all private chats, all
groups, a chat's administrators, one chat, one member of a chat) and each language, and
clients show the most specific list that applies. The stand-in stores each list under a
canonical key, so a list set with `{"type": "chat", "chat_id": "@shop"}` is the one read
back with the chat's numeric id, and checks the limits Telegram enforces: at most 100
commands, each 1-32 characters of `a-z 0-9 _`, descriptions of 1-256 characters, a
language code that is empty or two letters, and a scope that names a chat that exists.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from .errors import ApiError, bad_request
from .records import Chat

JSON = dict[str, Any]
ChatLookup = Callable[[int | str], Chat | None]

MAX_COMMANDS = 100
_COMMAND = re.compile(r"[a-z0-9_]{1,32}")
_LANGUAGE = re.compile(r"[a-z]{2}")
_WHOLE_SCOPES = frozenset(
    {"default", "all_private_chats", "all_group_chats", "all_chat_administrators"}
)
_CHAT_SCOPES = frozenset({"chat", "chat_administrators", "chat_member"})
_SCOPE = "can't parse BotCommandScope: "


def command_list(commands: Any) -> list[JSON]:
    """The validated list, as getMyCommands returns it."""
    if not isinstance(commands, list):
        raise bad_request("can't parse commands JSON object")
    if len(commands) > MAX_COMMANDS:
        raise bad_request("BOT_COMMANDS_TOO_MUCH")
    return [_command(item) for item in commands]


def _command(item: Any) -> JSON:
    if not isinstance(item, dict):
        raise bad_request("BOT_COMMAND_INVALID")
    command = str(item.get("command", "")).removeprefix("/")
    description = item.get("description")
    if not _COMMAND.fullmatch(command):
        raise bad_request("BOT_COMMAND_INVALID")
    if not isinstance(description, str) or not 1 <= len(description) <= 256:
        raise bad_request("BOT_COMMAND_DESCRIPTION_INVALID")
    return {"command": command, "description": description}


def language(code: str | None) -> str:
    """The `language_code` a list is for: "" (every language) or two letters."""
    code = code or ""
    if code and not _LANGUAGE.fullmatch(code):
        raise bad_request("LANG_CODE_INVALID")
    return code


def scope_key(scope: Any, lookup: ChatLookup) -> str:
    """The canonical form of a BotCommandScope (absent means "default"), as a dict key."""
    if scope is None:
        return _key({"type": "default"})
    if not isinstance(scope, dict):
        raise bad_request(_SCOPE + "BotCommandScope must be an Object")
    kind = scope.get("type")
    if kind in _WHOLE_SCOPES:
        return _key({"type": kind})
    if kind not in _CHAT_SCOPES:
        raise bad_request(_SCOPE + "Unsupported type specified")
    canonical: JSON = {"type": kind, "chat_id": _chat(scope.get("chat_id"), lookup).id}
    if kind == "chat_member":
        user_id = scope.get("user_id")
        if not isinstance(user_id, int) or isinstance(user_id, bool) or user_id <= 0:
            raise bad_request(_SCOPE + "Invalid user_id specified")
        canonical["user_id"] = user_id
    return _key(canonical)


def _chat(chat_id: Any, lookup: ChatLookup) -> Chat:
    if chat_id is None or chat_id == "":
        raise bad_request(_SCOPE + "Empty chat_id specified")
    if isinstance(chat_id, bool) or not isinstance(chat_id, int | str):
        raise bad_request(_SCOPE + 'Field "chat_id" must be of type String')
    chat = lookup(chat_id)
    if chat is None:
        raise bad_request("chat not found")
    return chat


def _key(scope: JSON) -> str:
    return json.dumps(scope, sort_keys=True)


def find_commands(
    stored: dict[tuple[str, str], list[JSON]], scope: Any, code: str, lookup: ChatLookup
) -> list[JSON]:
    """The list stored for exactly this scope and language ([] if none, or no such chat)."""
    try:
        key = scope_key(scope, lookup), language(code)
    except ApiError:
        return []
    return list(stored.get(key, []))
