"""Explicit message entities, checked the way Telegram checks them.

A bot that formats with `entities` instead of `parse_mode` computes offsets itself, and
the classic bug is counting Python characters where Telegram counts UTF-16 code units:
one emoji shifts every later entity by one. Telegram refuses entities that start or end
outside the text and entities whose required field is missing, in the words below
(tdlib's `fix_formatted_text` and telegram-bot-api's `get_text_entity`); the spec check
(standin/validation.py) has already refused unknown types and wrongly typed fields.
Empty entities are dropped, as Telegram drops them.
"""

from __future__ import annotations

from typing import Any

from .errors import ApiError, bad_request
from .formatting import check_url, sorted_entities, utf16_len

JSON = dict[str, Any]

_MAX_BOUND = 1_000_000
_REQUIRED = {"text_link": "url", "text_mention": "user", "custom_emoji": "custom_emoji_id"}
_PARSE = "can't parse MessageEntity: "


def checked_entities(text: str, entities: list[Any]) -> tuple[JSON, ...]:
    """The entities as Telegram keeps them (sorted, empty ones dropped), or its 400."""
    for entity in entities:
        _check_fields(entity)
    for entity in entities:
        _check_bounds(entity)
    length = utf16_len(text)
    kept = [dict(entity) for entity in entities if entity["length"] > 0]
    for entity in kept:
        offset, end = entity["offset"], entity["offset"] + entity["length"]
        if offset > length:
            raise bad_request(f"entity begins after the end of the text at UTF-16 offset {offset}")
        if end > length:
            raise bad_request(
                f"entity beginning at UTF-16 offset {offset} ends after the end of the text "
                f"at UTF-16 offset {end}"
            )
    return sorted_entities(kept)


def _check_fields(entity: Any) -> None:
    if not isinstance(entity, dict):
        raise bad_request(_PARSE + "expected an Object")
    required = _REQUIRED.get(str(entity.get("type")))
    if required is None:
        return
    value = entity.get(required)
    if value is None:
        raise bad_request(_PARSE + f'Can\'t find field "{required}"')
    if required == "url" and (not isinstance(value, str) or check_url(value) is None):
        raise bad_request(f"entity URL '{value}' is invalid: Wrong HTTP URL")
    if required == "custom_emoji_id" and not (isinstance(value, str) and value.isdigit()):
        raise bad_request(_PARSE + 'Field "custom_emoji_id" must be a valid Number')


def _check_bounds(entity: JSON) -> None:
    offset, length = entity.get("offset"), entity.get("length")
    if not isinstance(offset, int) or not 0 <= offset <= _MAX_BOUND:
        raise _incorrect("offset", offset)
    if not isinstance(length, int) or not 0 <= length <= _MAX_BOUND:
        raise _incorrect("length", length)


def _incorrect(what: str, value: Any) -> ApiError:
    return bad_request(f"receive an entity with incorrect {what} {value}")
