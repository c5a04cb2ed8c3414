"""The bot's side of linking a customer: `/start <token>` (issue 22 item 1).

The shop's "Link Telegram" button opens `https://t.me/<bot>?start=<token>`; Telegram sends
the bot `/start <token>` from that user. The token is handed to the shop's `claim`
endpoint (`[customer]` in the tools file, `agent_core.http.customer`), and the customer
is told, in their language, that they are linked, that the link expired or was used, or
that the shop could not be reached.

The token is a credential (whoever holds it until it expires can link their Telegram to
that shop account). It is never logged, never shown to staff, never written to the run
store: `/start` starts no run and is never relayed during a handoff. The durable inbox
stores every update before it is acknowledged, so the payload is taken out of the update
BEFORE it is stored (`stored_update`): a token never reaches the disk at all, which no
later clean-up ("redact once handled") can promise — a handling that fails, or a process
that dies, would leave it there. What that costs: an update replayed after a crash lost
its token, so the customer is asked to press the link again (or told they are linked,
when the first handling got that far).

Only a payload Telegram itself can send is a token: 1-64 characters of A-Z a-z 0-9 _ -
(the Bot API's deep-link rule), alone after the command, in a private chat. Anything else,
and the handoff's own payload (`human`, `human-<run>`), is the plain `/start`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from telegram import Message, Update

# The Bot API's deep-link parameter: "up to 64 characters ... A-Z, a-z, 0-9, _ and -".
DEEP_LINK_PAYLOAD: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_START: Final = re.compile(r"/start(?:@[A-Za-z0-9_]+)?(?=\s|$)", re.IGNORECASE)
# Set on a stored update whose /start payload was taken out (a top-level field no update
# from Telegram has, so no customer can forge it; PTB keeps it in `Update.api_kwargs`).
REDACTED_MARK: Final = "stepwise_start_payload_removed"
# What the payload is replaced with in the stored text (and nowhere else).
REDACTED_TEXT: Final = "[link]"
HANDOFF_PAYLOAD: Final = "human"


def start_payload(text: str | None) -> str | None:
    """What follows a leading `/start` (or `/start@bot`), stripped; None when `text` is not
    a /start with something after it."""
    if not text:
        return None
    found = _START.match(text)
    if found is None:
        return None
    rest = text[found.end() :].strip()
    return rest or None


def is_handoff_payload(payload: str) -> bool:
    """`human` or `human-<run>`: the handoff's "continue privately" link, never a token."""
    return payload.partition("-")[0] == HANDOFF_PAYLOAD


def link_token(message: Message) -> str | None:
    """The deep-link token of a `/start <token>` in a private chat, or None (plain /start)."""
    payload = start_payload(message.text)
    if payload is None or message.chat.type != "private":
        return None
    if not DEEP_LINK_PAYLOAD.fullmatch(payload) or is_handoff_payload(payload):
        return None
    return payload


def was_redacted(update: Update) -> bool:
    """Whether this update was replayed from the inbox with its link token taken out."""
    return bool(update.api_kwargs.get(REDACTED_MARK))


def stored_update(update: Update) -> str:
    """The update's JSON as the inbox stores it: a `/start <payload>` (new or edited) keeps
    its command and loses its payload — any payload but the handoff's, so a token never
    reaches the disk even when it breaks Telegram's rule."""
    body: dict[str, Any] = update.to_dict()
    token = update.message is not None and link_token(update.message) is not None
    for kind in ("message", "edited_message"):
        message = body.get(kind)
        if isinstance(message, dict):
            _redact_message(message)
    if token:  # a replay knows a link was being made (only a new message links)
        body[REDACTED_MARK] = True
    return json.dumps(body)


def _redact_message(message: dict[str, Any]) -> None:
    text = message.get("text")
    if not isinstance(text, str):
        return
    payload = start_payload(text)
    if payload is None or is_handoff_payload(payload):
        return
    found = _START.match(text)
    assert found is not None
    command = found.group(0)
    message["text"] = f"{command} {REDACTED_TEXT}"
    # Entities past the command pointed into the payload: gone with it.
    units = len(command.encode("utf-16-le")) // 2
    entities = [e for e in message.get("entities", []) if e.get("offset", 0) < units]
    if entities:
        message["entities"] = entities
    else:
        message.pop("entities", None)
