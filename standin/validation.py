"""Every request checked against the Bot API specification, refused in Telegram's words.

The stand-in implements a handful of methods by hand; what keeps each one honest about
parameter names, required parameters, types and closed value sets is the vendored spec
(`standin.botapi`). This module decides which of the spec's objections Telegram itself
would answer with 400, and words each the way Telegram does where its wording is known
(tdlib/telegram-bot-api `Client.cpp`), so a bot's error handling sees the real thing.

What Telegram tolerates, the stand-in tolerates too: unknown parameter names and unknown
fields inside JSON objects are ignored, and so are unknown names in `allowed_updates`.
The test suite (tests/botapi) still reports those for the bot's own requests, because a
parameter Telegram ignores is a bug in the bot.
"""

from __future__ import annotations

import json
from typing import Any

from .botapi import Problem, call_problems
from .errors import QUERY_TOO_OLD, ApiError, bad_request

JSON = dict[str, Any]

# Telegram's words for a missing required parameter; the rest get tdlib's generic
# 'Parameter "x" is required'.
_MISSING = {
    "chat_id": "chat_id is empty",
    "text": "message text is empty",
    "message_id": "message identifier is not specified",
    "file_id": "file_id not specified",
    "callback_query_id": QUERY_TOO_OLD,  # an empty id is an unknown (too old) query
    "action": "wrong parameter action in request",
}
# Telegram's words for a JSON parameter that does not parse.
_UNPARSABLE = {
    "reply_markup": "can't parse reply keyboard markup JSON object",
    "entities": "can't parse entities JSON object",
    "caption_entities": "can't parse entities JSON object",
    "reply_parameters": "can't parse reply parameters JSON object",
    "link_preview_options": "can't parse link preview options JSON object",
    "allowed_updates": "can't parse allowed_updates JSON array",
    "commands": "can't parse commands JSON object",
    "scope": "can't parse BotCommandScope JSON object",
}
# The prefix tdlib puts before a problem inside a JSON parameter (with a few exceptions).
_NESTED = {
    "reply_markup": "can't parse reply keyboard markup",
    "entities": "can't parse MessageEntity",
    "caption_entities": "can't parse MessageEntity",
    "reply_parameters": "can't parse reply parameters",
    "link_preview_options": "can't parse link preview options",
    "commands": "can't parse BotCommand",
    "scope": "can't parse BotCommandScope",
}
_NESTED_BY_OWNER = {"InlineKeyboardButton": "can't parse inline keyboard button"}
# Top-level values outside a closed set.
_BAD_VALUE = {
    "parse_mode": "unsupported parse_mode",
    "action": "wrong parameter action in request",
}
# tdlib's JSON type names.
_JSON_TYPES = {"Integer": "Number", "Float": "Number", "Boolean": "Boolean", "String": "String"}
# What the stand-in accepts beyond the spec, on purpose: tests long-poll for fractions of
# a second (Telegram's timeout is whole seconds).
_EXTENSIONS = frozenset({("getUpdates", "timeout")})


def validate_call(method: str, params: JSON) -> None:
    """Raise the 400 Telegram would answer for the first problem it does not tolerate."""
    for problem in call_problems(method, params):
        raw = params.get(problem.parameter)
        if not _tolerated(method, problem, raw):
            raise refusal(problem, raw)


def _tolerated(method: str, problem: Problem, raw: Any) -> bool:
    if problem.kind in ("unknown_method", "unknown_parameter", "unknown_field"):
        return True
    if problem.parameter == "allowed_updates" and problem.kind == "enum":
        return True
    if (method, problem.parameter) in _EXTENSIONS and not problem.nested:
        return _is_number(raw)
    return False


def _is_number(raw: Any) -> bool:
    try:
        float(raw)
    except (TypeError, ValueError):
        return False
    return True


def refusal(problem: Problem, raw: Any) -> ApiError:
    """The 400 for one problem, in Telegram's words where they are known."""
    name = problem.parameter
    if not problem.nested:
        if problem.kind == "missing":
            return bad_request(_MISSING.get(name, f'Parameter "{name}" is required'))
        if problem.kind == "enum":
            return bad_request(_BAD_VALUE.get(name, f"wrong parameter {name} in request"))
        if isinstance(raw, str) and name in _UNPARSABLE and not _parses(raw):
            return bad_request(_UNPARSABLE[name])
        if name == "reply_markup":
            return bad_request("object expected as reply markup")
        return bad_request(f'parameter "{name}" must be of type {problem.expected}')
    prefix = _NESTED_BY_OWNER.get(problem.owner) or _NESTED.get(name, f"can't parse {name}")
    return bad_request(f"{prefix}: {_nested_detail(problem)}")


def _nested_detail(problem: Problem) -> str:
    field = problem.field
    if problem.kind == "missing":
        return f'Can\'t find field "{field}"'
    if problem.kind == "enum":
        if field == "type":
            return "Unsupported type specified"
        return f'Field "{field}" has an unsupported value'
    expected = problem.expected
    shown = _JSON_TYPES.get(expected, "Array" if expected.startswith("Array") else "Object")
    return f'Field "{field}" must be of type {shown}'


def _parses(raw: str) -> bool:
    try:
        json.loads(raw)
    except ValueError:
        return False
    return True
