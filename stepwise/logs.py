"""How log lines look: human-readable by default, one JSON object per line with
`STEPWISE_LOG_FORMAT=json` (for a log shipper).

A JSON line has `ts` (UTC, ISO 8601), `level`, `logger`, `message`, the exception's
traceback as `exc` when there is one, `replica` (this process's run-lease owner id, once
the runtime is open: which replica wrote it), and, where known, `trace_id`, `run_id`,
`update_id` and `chat_id` — from the context the executor and the inbox set
(`agent_core.logcontext`), or from a record's `extra={"trace_id": ...}`.

In JSON mode every line on stderr is JSON: the command's own lines (`problem`: start-up
failures, "cannot reach Telegram … retrying"), warnings, and a traceback that ends the
process (`sys.excepthook`).

Secrets are blanked where records are made (`bot.redact`), before any formatter sees them;
customer text is only ever logged at DEBUG (the default level is WARNING).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Literal

from agent_core.logcontext import FIELDS, current_log_fields


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line (see the module)."""

    def __init__(self, replica: str | None = None) -> None:
        super().__init__()
        self.replica = replica

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if self.replica is not None:
            line["replica"] = self.replica
        line.update(current_log_fields())
        for name in FIELDS:  # `extra={"trace_id": ...}` where a caller passed it
            value = record.__dict__.get(name)
            if isinstance(value, str | int) and name not in line:
                line[name] = value
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exc"] = record.exc_text
        return json.dumps(line, ensure_ascii=False, default=str)


_FORMATTER: JsonFormatter | None = None


def configure_logging(fmt: Literal["text", "json"], level: str = "WARNING") -> None:
    """The root logger's `level`; JSON lines on the process's stderr handler
    (`logging.basicConfig`'s, added if missing) for "json", while "text" leaves the
    human-readable lines as they are. Handlers others added (a test runner's) are left
    alone."""
    global _FORMATTER
    logging.getLogger().setLevel(level)
    if fmt != "json":
        return
    _FORMATTER = JsonFormatter()
    root = logging.getLogger()
    ours = [h for h in root.handlers if type(h) is logging.StreamHandler]
    if not ours:
        ours = [logging.StreamHandler(sys.stderr)]
        root.addHandler(ours[0])
    for handler in ours:
        handler.setFormatter(_FORMATTER)
    # Every other line that reaches stderr, as JSON too: Python's warnings, and a traceback
    # that ends the process (our own lines: `problem`).
    logging.captureWarnings(True)
    sys.excepthook = _log_uncaught


def set_replica(owner: str) -> None:
    """Name this process in every JSON line from now on (its run-lease owner id)."""
    if _FORMATTER is not None:
        _FORMATTER.replica = owner


# -- lines of our own on stderr ---------------------------------------------------------------

PROBLEM_LOGGER = "stepwise"


def json_requested(environ: Mapping[str, str] | None = None) -> bool:
    """`STEPWISE_LOG_FORMAT=json` as the environment says it, before the settings are read
    (or when they could not be): a bad setting must reach a log shipper as JSON too."""
    value = (os.environ if environ is None else environ).get("STEPWISE_LOG_FORMAT", "")
    return value.strip().lower() == "json"


def problem(text: str, level: int = logging.ERROR) -> None:
    """One line on stderr for the operator: "stepwise: <text>" in text mode, a JSON line
    (logger "stepwise") in JSON mode. Written whatever the log level: these are the lines
    that say why a command stops or waits, and a WARNING level must not hide them."""
    if _FORMATTER is None:
        print(f"stepwise: {text}", file=sys.stderr, flush=True)
        return
    # Made through the logging machinery, so the redaction of `bot.redact` applies.
    record = logging.getLogger(PROBLEM_LOGGER).makeRecord(
        PROBLEM_LOGGER, level, __file__, 0, text, (), None
    )
    print(_FORMATTER.format(record), file=sys.stderr, flush=True)


def _log_uncaught(
    kind: type[BaseException], value: BaseException, traceback: TracebackType | None
) -> None:
    """A traceback that would end the process, as one JSON line (`exc` holds it)."""
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, value, traceback)
        return
    logging.getLogger(PROBLEM_LOGGER).critical(
        "stepwise stopped on an unexpected error", exc_info=(kind, value, traceback)
    )
