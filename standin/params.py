"""Bot API parameters, read the way Telegram reads them.

Telegram accepts every parameter as a query string, a form field or a JSON value, and
python-telegram-bot sends form fields whose non-string values are JSON-encoded
(`chat_id=42`, `reply_markup={"inline_keyboard":...}`). The accessors therefore coerce
from either representation instead of trusting the transport's types, so the stand-in
accepts exactly the requests Telegram accepts, whichever way a client encodes them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .errors import bad_request


class Params:
    """One request's parameters with Telegram-style coercion."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw: dict[str, Any] = dict(raw)

    def present(self, name: str) -> bool:
        """Telegram treats a missing, null and empty parameter alike."""
        value = self.raw.get(name)
        return value is not None and value != ""

    def text(self, name: str) -> str | None:
        """A string parameter; numbers sent as JSON become their decimal text."""
        value = self.raw.get(name)
        if value is None:
            return None
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (int, float, str)):
            return str(value)
        return json.dumps(value)

    def integer(self, name: str) -> int | None:
        """An integer parameter, or None when absent or not a number."""
        value = self.raw.get(name)
        if isinstance(value, bool) or value is None:
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                return None
        return None

    def number(self, name: str) -> float | None:
        """A float parameter (cache times, timeouts), or None when absent or malformed."""
        value = self.raw.get(name)
        if isinstance(value, bool) or value is None:
            return None
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                return None
        return None

    def flag(self, name: str) -> bool:
        """A Boolean parameter; form bodies carry "true"/"1", JSON bodies carry true."""
        value = self.raw.get(name)
        if isinstance(value, str):
            return value.strip().lower() in ("true", "1")
        return bool(value)

    def json_value(self, name: str, error: str) -> Any:
        """A JSON-serialised parameter: decode strings, pass structured values through.

        `error` is Telegram's description for an undecodable value of this parameter.
        """
        value = self.raw.get(name)
        if not isinstance(value, str):
            return value
        if value.strip() == "":
            return None
        try:
            return json.loads(value)
        except ValueError:
            raise bad_request(error) from None

    def chat_id(self) -> int | str | None:
        """`chat_id` as an int, or the "@username" string Telegram also accepts."""
        if not self.present("chat_id"):
            return None
        number = self.integer("chat_id")
        if number is not None:
            return number
        return self.text("chat_id")
