"""What a log line is about: the run, its trace, the update and the chat being handled.

Set where that is known (the executor around a drive, the bot's inbox around an update's
handling) and read by the log formatter (`stepwise.logs`), so a line logged anywhere below
(a tool, storage, a Telegram call) carries the ids without every call passing them. A
context variable: tasks started while handling inherit it, and it is reset when the block
ends, so a later drive in the same task never carries an earlier run's ids.

Ids only: never customer text, never secrets (they would end up in every line).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar

# The fields a log line may carry; anything else passed to `log_fields` is refused.
FIELDS = ("trace_id", "run_id", "update_id", "chat_id")

_FIELDS: ContextVar[Mapping[str, str | int] | None] = ContextVar(
    "stepwise_log_fields", default=None
)


@contextlib.contextmanager
def log_fields(**fields: str | int | None) -> Iterator[None]:
    """Within the block, log lines carry `fields` (None values are left out) on top of
    those already set."""
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise ValueError(f"not a log field: {sorted(unknown)}")
    merged = {**(_FIELDS.get() or {}), **{k: v for k, v in fields.items() if v is not None}}
    token = _FIELDS.set(merged)
    try:
        yield
    finally:
        _FIELDS.reset(token)


def current_log_fields() -> Mapping[str, str | int]:
    """The fields set for the code running now ({} outside any block)."""
    return _FIELDS.get() or {}
