"""Telegram user and chat ids, checked where they come in from outside.

The one validator for ids: the settings (STEPWISE_STAFF_IDS, STEPWISE_STAFF_CHAT_ID,
STEPWISE_DEMO_USER), the command line (`--user`, `--chat`) and the staff console's
filters all go through `telegram_id`, so an id no Telegram account can have is refused
with one sentence at the door, not as an overflow deep in storage (SQLite and
PostgreSQL keep ids as 64-bit integers).

The bounds are the Bot API's (standin/botapi/api.min.json, `User.id` and `Chat.id`): an
id "has at most 52 significant bits". User ids are positive; chat ids are not 0 and may be
negative (groups, and supergroups and channels as -100…).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BeforeValidator

ID_BITS = 52
MAX_ID = 2**ID_BITS - 1  # 4503599627370495: the largest number with 52 significant bits
_INTEGER = re.compile(r"^[+-]?[0-9]{1,30}$")

IdKind = Literal["user", "chat"]


class BadId(ValueError):
    """Not an id Telegram can give; the message says what one looks like."""


def id_rule(kind: IdKind) -> str:
    """What a valid id of `kind` looks like, in words."""
    if kind == "user":
        return f"a Telegram user id is a whole number from 1 to {MAX_ID}"
    return f"a Telegram chat id is a whole number from -{MAX_ID} to {MAX_ID}, not 0"


def telegram_id(value: object, kind: IdKind = "user") -> int:
    """`value` (an int, or text as a person types it) as a Telegram id of `kind`.

    Raises BadId, whose message is `id_rule(kind)`, for anything else: text that is not a
    whole number, a bool or float, 0, a negative user id, more than 52 significant bits.
    """
    if isinstance(value, str):
        text = value.strip()
        if not _INTEGER.match(text):
            raise BadId(id_rule(kind))
        number = int(text)
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        raise BadId(id_rule(kind))
    low = 1 if kind == "user" else -MAX_ID
    if not low <= number <= MAX_ID or number == 0:
        raise BadId(id_rule(kind))
    return number


def _user(value: object) -> int:
    return telegram_id(value, "user")


def _chat(value: object) -> int:
    return telegram_id(value, "chat")


# For pydantic models (the settings): the same check as a field type.
UserId = Annotated[int, BeforeValidator(_user)]
ChatId = Annotated[int, BeforeValidator(_chat)]
