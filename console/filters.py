"""The runs list's query string: parsed into a `RunFilter`, and written back into links.

Staff edit URLs by hand and share them, so nothing here raises: a bad value is dropped
from the filter and reported next to the form (the page answers 400), and the rest of the
filter still applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urlencode

from agent_core.ids import BadId, telegram_id
from agent_core.models import ErrorType, RunStatus
from storage.history import ANY_ERROR, RunFilter

FIELDS = ("status", "user", "error", "tool", "since", "until", "q", "run", "unsupported", "handed")
MAX_TEXT = 200
_TIME_FORMATS = ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%d")


@dataclass
class ParsedFilter:
    filter: RunFilter
    # The raw values as typed, to show them again in the form.
    values: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def query(self, **extra: str | None) -> str:
        """The query string of this filter plus `extra` (e.g. a paging cursor)."""
        items = {k: v for k, v in self.values.items() if v}
        items.update({k: v for k, v in extra.items() if v})
        return urlencode(items)

    @property
    def active(self) -> bool:
        return any(self.values.get(name) for name in FIELDS)


def parse_time(value: str) -> datetime | None:
    """A UTC time from a datetime-local input ("2026-01-31T14:05") or a date."""
    text = value.strip().removesuffix("Z")
    for fmt in _TIME_FORMATS:
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def parse_filter(params: Mapping[str, str]) -> ParsedFilter:
    values = {name: params.get(name, "").strip() for name in FIELDS}
    errors: list[str] = []

    status = None
    if values["status"]:
        try:
            status = RunStatus(values["status"])
        except ValueError:
            errors.append(f"Unknown status {values['status']!r}.")
    user_id = None
    if values["user"]:
        try:
            user_id = telegram_id(values["user"], "user")
        except BadId as exc:
            errors.append(f"User: {exc}.")
    error_type = None
    if values["error"]:
        known = {e.value for e in ErrorType} | {ANY_ERROR}
        if values["error"] in known:
            error_type = values["error"]
        else:
            errors.append(f"Unknown error type {values['error']!r}.")
    times: dict[str, datetime | None] = {}
    for name, label in (("since", "From"), ("until", "Until")):
        parsed = parse_time(values[name]) if values[name] else None
        if values[name] and parsed is None:
            errors.append(f"{label} must look like 2026-01-31 or 2026-01-31T14:05 (UTC).")
        elif parsed is not None:  # shown again in the form's datetime-local input
            values[name] = parsed.strftime("%Y-%m-%dT%H:%M:%S")
        times[name] = parsed
    for name in ("q", "tool", "run"):
        values[name] = values[name][:MAX_TEXT]
    values["unsupported"] = "1" if values["unsupported"] in ("1", "on", "true", "yes") else ""
    values["handed"] = "1" if values["handed"] in ("1", "on", "true", "yes") else ""

    flt = RunFilter(
        status=status,
        user_id=user_id,
        error_type=error_type,
        tool=values["tool"] or None,
        since=times["since"],
        until=times["until"],
        text=values["q"] or None,
        run_id=values["run"] or None,
        unsupported=values["unsupported"] in ("1", "on", "true", "yes"),
        handed_off=values["handed"] == "1",
    )
    return ParsedFilter(flt, values, errors)
