"""Keep secrets (the bot token, webhook secrets, deep-link tokens) out of every log line.

httpx logs each request URL at INFO and PTB its base URL at DEBUG; both contain the bot
token. A logger or handler filter would miss records of child loggers or of handlers added
later (pytest's, a service manager's), so secrets are removed where records are made.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

REDACTED = "[REDACTED]"
# A deep link's `/start <token>` (`bot.link`): the token is a credential. PTB logs every
# update it receives at DEBUG, so the payload is blanked out of every record, whoever
# logged it (the handoff's `/start human-<run>` too: nothing to tell them apart by here).
START_PAYLOAD = re.compile(r"(/start(?:@[A-Za-z0-9_]+)?)([ \t]+)[A-Za-z0-9_-]{1,64}")
_MIN_SECRET_CHARS = 8  # shorter strings are too common to blank out of every log line


class _RedactingRecordFactory:
    """Builds every log record of the process, then blanks the known secrets out of it.

    httpx logs each request URL at INFO and PTB its base URL at DEBUG; both contain the
    bot token. A logger or handler filter would miss records of child loggers or of
    handlers added later (pytest's, a service manager's), so secrets are removed where
    records are made.
    """

    def __init__(self, make: Callable[..., logging.LogRecord]) -> None:
        self.make = make
        self.secrets: set[str] = set()

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.make(*args, **kwargs)
        self._redact(record)
        return record

    def _redact(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string is logging's problem, not ours
            return
        if any(secret in message for secret in self.secrets) or "/start" in message:
            record.msg, record.args = self._blank(message), None
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            text = logging.Formatter().formatException(record.exc_info)
            if any(secret in text for secret in self.secrets) or "/start" in text:
                record.exc_text = self._blank(text)

    def _blank(self, text: str) -> str:
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, REDACTED)
        return START_PAYLOAD.sub(r"\1\2[link]", text)


def redact_in_logs(*secrets: str | None) -> None:
    """Never let these strings reach a log line (idempotent; process-wide)."""
    factory = logging.getLogRecordFactory()
    if not isinstance(factory, _RedactingRecordFactory):
        factory = _RedactingRecordFactory(factory)
        logging.setLogRecordFactory(factory)
    factory.secrets.update(s for s in secrets if s and len(s) >= _MIN_SECRET_CHARS)
