"""What one HTTP answer means to the executor: data, or a typed failure. Pure.

Responses
---------
======================================================  ===================================
2xx with a JSON body that keeps the contract            ok
2xx with no body, `null`, `[]`, `{}`, `{"results": []}`  empty_result (cancel_order: internal)
2xx that is not JSON, or breaks the contract            internal (the message names the field)
404                                                     not_found
401, 403                                                permission_denied
400, 409, 422                                           invalid_arguments
408; read, write or pool timeout                        timeout (retried)
429, 5xx; connection refused or broken                  unavailable (retried like timeout)
anything else (3xx too: redirects are not followed)     internal
======================================================  ===================================

The upstream's own error text is kept for staff in the failure message, cut to 300
characters; customers never see it (`answers` words every failure itself).

A transient answer with `Retry-After` (seconds or an HTTP date) is retried once inside the
same attempt, after waiting that long, when the wait is at most 10 s and still leaves half
of `timeout_s` for the retried request; otherwise it is reported at once and the
executor's backoff takes over. The retried request is the same request, idempotency key
included.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import MappingProxyType
from typing import Any, Final

from agent_core.catalog import CATALOG
from agent_core.http.contracts import ContractBroken, check_contract, has_contract
from agent_core.models import ErrorType, Risk

MESSAGE_LIMIT: Final = 300
TRANSIENT: Final = frozenset({ErrorType.TIMEOUT, ErrorType.UNAVAILABLE})


def writes(tool: str | None) -> bool:
    """A tool that changes something (the catalog's high-risk tools): an empty 2xx leaves
    its outcome unknown, so it breaks the contract instead of being an empty result."""
    spec = CATALOG.get(tool or "")
    return spec is not None and spec.risk is Risk.HIGH


@dataclass(frozen=True)
class HttpOutcome:
    """What one HTTP exchange means to the executor: data, or a typed failure."""

    status: int | None  # None when no response arrived
    data: Any = None
    error_type: ErrorType | None = None
    message: str = ""
    retry_after_s: float | None = None

    @property
    def ok(self) -> bool:
        return self.error_type is None

    @property
    def transient(self) -> bool:
        return self.error_type in TRANSIENT


_STATUS_ERRORS: Final[Mapping[int, ErrorType]] = MappingProxyType(
    {
        400: ErrorType.INVALID_ARGUMENTS,
        401: ErrorType.PERMISSION_DENIED,
        403: ErrorType.PERMISSION_DENIED,
        404: ErrorType.NOT_FOUND,
        408: ErrorType.TIMEOUT,
        409: ErrorType.INVALID_ARGUMENTS,  # e.g. the order can no longer be cancelled
        422: ErrorType.INVALID_ARGUMENTS,
        429: ErrorType.UNAVAILABLE,
    }
)


def map_response(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    tool: str | None = None,
    now: datetime | None = None,
) -> HttpOutcome:
    """The meaning of one response (see the module table). Pure, and never raises.

    `tool` selects the response contract to check; `now` is for an HTTP-date Retry-After.
    """
    if 200 <= status < 300:
        return _map_success(status, body, tool)
    error_type = _STATUS_ERRORS.get(status)
    if error_type is None:
        error_type = ErrorType.UNAVAILABLE if 500 <= status < 600 else ErrorType.INTERNAL
    retry_after = _retry_after(headers, now) if error_type in TRANSIENT else None
    detail = _upstream_detail(body)
    message = f"upstream answered HTTP {status}" + (f": {detail}" if detail else "")
    if retry_after is not None:
        message += f" (Retry-After {retry_after:g}s)"
    return HttpOutcome(status, error_type=error_type, message=message, retry_after_s=retry_after)


def _map_success(status: int, body: bytes, tool: str | None) -> HttpOutcome:
    data: Any = None
    if body.strip():
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            return HttpOutcome(
                status,
                error_type=ErrorType.INTERNAL,
                message=f"upstream answered HTTP {status} with a body that is not JSON",
            )
    if not writes(tool) and _is_empty(data):
        return HttpOutcome(
            status,
            error_type=ErrorType.EMPTY_RESULT,
            message=f"upstream answered HTTP {status} with no results",
        )
    if tool is None or not has_contract(tool):
        return HttpOutcome(status, data=data)
    try:
        return HttpOutcome(status, data=check_contract(tool, data))
    except ContractBroken as exc:
        return HttpOutcome(
            status,
            error_type=ErrorType.INTERNAL,
            message=f"{tool} response breaks the contract: {exc}",
        )


def _is_empty(data: Any) -> bool:
    if data is None or data == [] or data == {}:
        return True
    return isinstance(data, dict) and data.get("results") == []


def parse_retry_after(value: str, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After value (delta-seconds or HTTP date); None if bad."""
    value = value.strip()
    if re.fullmatch(r"[0-9]{1,10}", value):
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _retry_after(headers: Mapping[str, str], now: datetime | None) -> float | None:
    for name, value in headers.items():
        if name.lower() == "retry-after":
            return parse_retry_after(value, now)
    return None


def _upstream_detail(body: bytes) -> str:
    """The upstream's own error text, one line, at most MESSAGE_LIMIT characters."""
    try:
        data: Any = json.loads(body)
    except (ValueError, RecursionError):
        data = None
    text = body.decode("utf-8", errors="replace")
    if isinstance(data, dict):
        for key in ("message", "error", "detail", "title"):
            value = data.get(key)
            if isinstance(value, dict):
                value = value.get("message")
            if isinstance(value, str) and value.strip():
                text = value
                break
    return clip(text)


def clip(text: str) -> str:
    text = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "…"
