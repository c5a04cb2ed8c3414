"""What one HTTP answer means to the executor: data, or a typed failure. Pure.

Responses
---------
======================================================  ===================================
2xx with a JSON body that keeps the contract            ok
2xx with no body, `null`, `[]`, `{}`, `{"results": []}`  empty_result (cancel_order: internal)
2xx that is not JSON, or breaks the contract            backend (the message names the field)
404                                                     not_found
401                                                     backend (the shop's key refused)
403                                                     permission_denied
400, 409, 422                                           invalid_arguments
408; read, write or pool timeout                        timeout (retried)
429, 5xx; connection refused or broken                  unavailable (retried like timeout;
                                                        a 5xx still failing after the last
                                                        retry is backend, see `executor`)
anything else (3xx too: redirects are not followed)     internal
======================================================  ===================================

The upstream's own error text is kept for staff in the failure message, cut to 300
characters AFTER every secret was removed from it (a secret cut in half would no longer be
found); customers never see it (`answers` words every failure itself).

A 401 is the shop refusing stepwise's own credentials (the customer is never the one
authenticated: the upstream answers 403 or 404 for another customer's order), so it is
`backend`, like an error code the mapping calls `"backend"` (WooCommerce's
`woocommerce_rest_authentication_error`). Backend failures are never worded as "not
found": the customer reads that the order system has a problem and staff are alerted.

A tool configured with a response mapping (`agent_core.http.mapping`) has its 2xx answer
mapped into its result contract before the contract is checked, an `owner` that is not the
requesting customer is `permission_denied`, and an error body whose code the mapping knows
has the mapped meaning whatever the status (with its refusal code, for the answer).

A transient answer with `Retry-After` (seconds or an HTTP date) is retried once inside the
same attempt, after waiting that long, when the wait is at most 10 s and still leaves half
of `timeout_s` for the retried request; otherwise it is reported at once and the
executor's backoff takes over. The retried request is the same request, idempotency key
included — unless it may already have been carried out (`HttpOutcome.may_have_happened`: a
5xx, a read timeout, a connection lost after sending) by a backend that ignores the key:
then nothing is re-sent and the executor reconciles (`agent_core.execution.policy`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import MappingProxyType
from typing import Any, Final

from agent_core.catalog.builtin import CATALOG
from agent_core.catalog.spec import ToolSpec
from agent_core.execution.results import ContractBroken, check_result, is_empty
from agent_core.http.mapping import ErrorMapping, ResponseMapping
from agent_core.models import SERVER_ERROR_CODE, ErrorType, Risk

MESSAGE_LIMIT: Final = 300
TRANSIENT: Final = frozenset({ErrorType.TIMEOUT, ErrorType.UNAVAILABLE})


def _same(text: str) -> str:
    return text


@dataclass(frozen=True)
class Reading:
    """How to read one tool's answers: its entry, its mappings, who asked, what to hide."""

    spec: ToolSpec | None = None
    response: ResponseMapping | None = None
    errors: ErrorMapping | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    user_id: int | None = None
    redact: Callable[[str], str] = _same
    # The asking customer's id at the shop (the `[customer]` lookup), for `owner_is`.
    customer_id: str | None = None


def writes(spec: ToolSpec | None) -> bool:
    """A tool that changes something (a high-risk tool): an empty 2xx leaves its outcome
    unknown, so it breaks the contract instead of being an empty result."""
    return spec is not None and spec.risk is Risk.HIGH


@dataclass(frozen=True)
class HttpOutcome:
    """What one HTTP exchange means to the executor: data, or a typed failure."""

    status: int | None  # None when no response arrived
    data: Any = None
    error_type: ErrorType | None = None
    message: str = ""
    retry_after_s: float | None = None
    # A refusal's reason from the error mapping (`invalid_arguments:<code>`).
    code: str | None = None
    # The request may have reached the upstream and been carried out: a 5xx, or no answer
    # after the request was (perhaps) sent. Not a refused connection, a 408 or a 429.
    may_have_happened: bool = False

    @property
    def ok(self) -> bool:
        return self.error_type is None

    @property
    def transient(self) -> bool:
        return self.error_type in TRANSIENT


_STATUS_ERRORS: Final[Mapping[int, ErrorType]] = MappingProxyType(
    {
        400: ErrorType.INVALID_ARGUMENTS,
        401: ErrorType.BACKEND,
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
    reading: Reading | None = None,
) -> HttpOutcome:
    """The meaning of one response (see the module table). Pure, and never raises.

    `tool` names the tool (its catalog entry's contract is checked unless `reading` gives
    the entry); `now` is for an HTTP-date Retry-After.
    """
    reading = reading or Reading()
    spec = reading.spec or CATALOG.get(tool or "")
    name = tool or (spec.name if spec else None)
    if 200 <= status < 300:
        return _map_success(status, body, name, spec, reading)
    data = _json(body)
    error_type = _STATUS_ERRORS.get(status)
    if error_type is None:
        error_type = ErrorType.UNAVAILABLE if 500 <= status < 600 else ErrorType.INTERNAL
    code: str | None = None
    text: str | None = None
    if reading.errors is not None:
        mapped, code, text = reading.errors.read(data)
        error_type = mapped or error_type
    retry_after = _retry_after(headers, now) if error_type in TRANSIENT else None
    detail = _upstream_detail(body, data, text, reading.redact)
    message = f"upstream answered HTTP {status}" + (f": {detail}" if detail else "")
    if retry_after is not None:
        message += f" (Retry-After {retry_after:g}s)"
    if code is None and error_type is ErrorType.UNAVAILABLE and 500 <= status < 600:
        code = SERVER_ERROR_CODE
    return HttpOutcome(
        status,
        error_type=error_type,
        message=message,
        retry_after_s=retry_after,
        code=code,
        # A 5xx the error mapping does not explain: the upstream got the request and broke
        # somewhere, perhaps after it made the change.
        may_have_happened=error_type in TRANSIENT and 500 <= status < 600,
    )


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def _map_success(
    status: int, body: bytes, tool: str | None, spec: ToolSpec | None, reading: Reading
) -> HttpOutcome:
    data: Any = None
    if body.strip():
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            return HttpOutcome(
                status,
                error_type=ErrorType.BACKEND,
                message=f"upstream answered HTTP {status} with a body that is not JSON",
            )
    if reading.response is not None and data is not None:
        try:
            owner = reading.response.owner_of(data)
            data = reading.response.apply(data, reading.args)
        except RecursionError:
            return HttpOutcome(
                status, error_type=ErrorType.INTERNAL, message=f"{tool}: answer nested too deeply"
            )
        whose = (
            reading.customer_id if reading.response.owner_is == "customer" else str(reading.user_id)
        )
        nothing = owner is None and not writes(spec) and is_empty(spec, data)
        if reading.response.owner is not None and not nothing and (owner is None or owner != whose):
            return HttpOutcome(
                status,
                error_type=ErrorType.PERMISSION_DENIED,
                message=f"{tool}: the answer is not the requesting user's",
            )
    if not writes(spec) and is_empty(spec, data):
        return HttpOutcome(
            status,
            error_type=ErrorType.EMPTY_RESULT,
            message=f"upstream answered HTTP {status} with no results",
        )
    if spec is None:
        return HttpOutcome(status, data=data)
    try:
        return HttpOutcome(status, data=check_result(spec, data))
    except ContractBroken as exc:
        return HttpOutcome(
            status,
            error_type=ErrorType.BACKEND,
            message=f"{tool} response breaks the contract: {exc}",
        )


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


def _upstream_detail(
    body: bytes, data: Any, mapped: str | None, redact: Callable[[str], str]
) -> str:
    """The upstream's own error text, one line, secrets removed, then at most
    MESSAGE_LIMIT characters."""
    text = mapped if mapped is not None else body.decode("utf-8", errors="replace")
    if mapped is None and isinstance(data, dict):
        for key in ("message", "error", "detail", "title"):
            value = data.get(key)
            if isinstance(value, dict):
                value = value.get("message")
            if isinstance(value, str) and value.strip():
                text = value
                break
    return clip(text, redact)


def clip(text: str, redact: Callable[[str], str] = _same) -> str:
    """One line of at most MESSAGE_LIMIT characters, secrets removed before the cut (and
    after it too: collapsing whitespace could join the pieces of one)."""
    text = " ".join("".join(c if c.isprintable() else " " for c in redact(text)).split())
    text = redact(text)
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "…"
