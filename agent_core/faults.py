"""Which failed tool calls are the shop's system failing, and what kind of failure, in
the words staff read in alerts and operators in logs. Pure.

A customer's own request can fail too (no such order, a refused change, a bad argument):
that is the conversation working, never an alert nor a warning. The shop's system failing
is `backend` (its key refused, a contract broken, 5xx through every retry), `unavailable`
(connection refused, DNS, TLS, 429/5xx), `timeout`, or `internal` (an answer no tool could
read). Transport failures are told apart by the message the HTTP tools write ("no answer
from upstream: ConnectError ([Errno 111] Connection refused)", `agent_core.http.client`):
the exception's name and the operating system's words.
"""

from __future__ import annotations

import re
from typing import Final

from agent_core.models import ErrorType

SHOP_FAULTS: Final = frozenset(
    {ErrorType.BACKEND, ErrorType.UNAVAILABLE, ErrorType.TIMEOUT, ErrorType.INTERNAL}
)
# A run stopped on one of these has met the shop's system broken or out of reach.
STOPS_ON_THE_SHOP: Final = frozenset(
    {ErrorType.BACKEND.value, ErrorType.UNAVAILABLE.value, ErrorType.TIMEOUT.value}
)

_STATUS = re.compile(r"\bHTTP (\d{3})\b")
_DNS = re.compile(
    r"Name or service not known|nodename nor servname|Temporary failure in name resolution"
    r"|No address associated|getaddrinfo failed|Errno -[235]\b",
    re.IGNORECASE,
)
_TLS = re.compile(r"\bSSL\b|\bTLS\b|CERTIFICATE", re.IGNORECASE)
_REFUSED = re.compile(r"Connection refused|Errno 111\b|ConnectError|ConnectionRefused")
_TIMEOUT = re.compile(r"Timeout|timed out|took longer than", re.IGNORECASE)


def fault_kind(error_type: ErrorType | None, message: str) -> str | None:
    """The kind of a shop failure ("HTTP 503", "connection refused", "DNS failure",
    "TLS failure", "timeout", "contract", "not JSON", "no answer", "internal"); None when
    the failure is not the shop's system (a missing order, a refused change…)."""
    if error_type not in SHOP_FAULTS:
        return None
    if "breaks the contract" in message:
        return "contract"
    if "not JSON" in message:
        return "not JSON"
    if (found := _STATUS.search(message)) is not None:
        return f"HTTP {found.group(1)}"
    if error_type is ErrorType.TIMEOUT or _TIMEOUT.search(message):
        return "timeout"
    if _TLS.search(message):
        return "TLS failure"
    if _DNS.search(message):
        return "DNS failure"
    if _REFUSED.search(message):
        return "connection refused"
    if error_type is ErrorType.UNAVAILABLE:
        return "no answer"
    return "backend" if error_type is ErrorType.BACKEND else "internal"
