"""Reply markup validation with Telegram's rules and error texts.

The checks that matter in practice are the ones bots fail in production: callback_data
over 64 bytes (BUTTON_DATA_INVALID), buttons with no action or more than one, and markup
that is not JSON. Only inline keyboards are echoed back on messages, as Telegram does; other markup
(custom keyboards, removal, force reply) changes what the user sees but not the message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import bad_request
from .formatting import check_url
from .params import Params

JSON = dict[str, Any]

MAX_CALLBACK_DATA_BYTES = 64
_ACTIONS = (
    "url",
    "callback_data",
    "web_app",
    "login_url",
    "switch_inline_query",
    "switch_inline_query_current_chat",
    "switch_inline_query_chosen_chat",
    "copy_text",
    "callback_game",
    "pay",
)
# Telegram treats these as absent when empty, which makes the button a bare text button.
_EMPTY_MEANS_ABSENT = ("url", "callback_data")
_BUTTON = "can't parse inline keyboard button: "


@dataclass(frozen=True)
class Button:
    """One inline button as the user sees it."""

    text: str
    callback_data: str | None = None
    url: str | None = None

    def as_dict(self) -> JSON:
        """JSON form for the /_test endpoints."""
        data: JSON = {"text": self.text}
        if self.callback_data is not None:
            data["callback_data"] = self.callback_data
        if self.url is not None:
            data["url"] = self.url
        return data


def parse_reply_markup(params: Params) -> JSON | None:
    """Validate `reply_markup`; returns the markup to store, or None when absent."""
    markup = params.json_value("reply_markup", "can't parse reply keyboard markup JSON object")
    if markup is None:
        return None
    if not isinstance(markup, dict):
        raise bad_request("object expected as reply markup")
    if "inline_keyboard" in markup:
        return {"inline_keyboard": _inline_rows(markup["inline_keyboard"])}
    if "keyboard" in markup:
        _check_rows(markup["keyboard"], "keyboard", "ReplyKeyboardMarkup")
    return dict(markup)


def inline_keyboard(markup: JSON | None) -> JSON | None:
    """The part of a message's markup that Telegram echoes back in Message objects."""
    if markup is None or "inline_keyboard" not in markup:
        return None
    return {"inline_keyboard": markup["inline_keyboard"]}


def buttons(markup: JSON | None) -> tuple[tuple[Button, ...], ...]:
    """Inline buttons by row, for tests to look at and press."""
    keyboard = inline_keyboard(markup)
    if keyboard is None:
        return ()
    return tuple(
        tuple(
            Button(
                text=str(button["text"]),
                callback_data=button.get("callback_data"),
                url=button.get("url"),
            )
            for button in row
        )
        for row in keyboard["inline_keyboard"]
    )


def _check_rows(rows: Any, field: str, type_name: str) -> list[list[Any]]:
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise bad_request(f'field "{field}" of the {type_name} should be an Array of Arrays')
    return rows


def _inline_rows(rows: Any) -> list[list[JSON]]:
    checked = _check_rows(rows, "inline_keyboard", "InlineKeyboardMarkup")
    return [[_inline_button(button) for button in row] for row in checked]


def _inline_button(button: Any) -> JSON:
    if not isinstance(button, dict):
        raise bad_request(_BUTTON + "InlineKeyboardButton should be an object")
    if not isinstance(button.get("text"), str):
        raise bad_request(_BUTTON + 'Field "text" must be of type String')
    actions = [
        name
        for name in _ACTIONS
        if name in button
        and button[name] is not None
        and not (name in _EMPTY_MEANS_ABSENT and button[name] == "")
    ]
    if not actions:
        raise bad_request(_BUTTON + "Text buttons are unallowed in the inline keyboard")
    if len(actions) > 1:
        # The spec: "Exactly one of the optional fields must be used to specify type of the
        # button." Telegram itself silently keeps the first by its precedence (url, then
        # callback_data, ...) and drops the others; refusing shows the bot its mistake.
        raise bad_request(_BUTTON + f"exactly one action is allowed, got {', '.join(actions)}")
    if "callback_data" in actions:
        _check_callback_data(button["callback_data"])
    if "url" in actions:
        _check_button_url(button["url"])
    return {"text": button["text"], **{name: button[name] for name in actions}}


def _check_callback_data(data: Any) -> None:
    if not isinstance(data, str):
        raise bad_request(_BUTTON + 'Field "callback_data" must be of type String')
    if len(data.encode("utf-8")) > MAX_CALLBACK_DATA_BYTES:
        raise bad_request("BUTTON_DATA_INVALID")


def _check_button_url(url: Any) -> None:
    if not isinstance(url, str):
        raise bad_request(_BUTTON + 'Field "url" must be of type String')
    if check_url(url) is None:
        raise bad_request(f"inline keyboard button URL '{url}' is invalid: Wrong HTTP URL")
