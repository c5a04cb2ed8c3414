"""Bot API failures in Telegram's own shapes and words.

Bots branch on Telegram's exact descriptions ("message is not modified", "query is too
old ...") and python-telegram-bot maps HTTP statuses to exception classes, so a stand-in
that says the same thing differently would let wrong error handling pass. Every failure
the stand-in serves is built here, once, with the text Telegram uses.
"""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]

NOT_MODIFIED = (
    "message is not modified: specified new message content and reply markup are exactly "
    "the same as a current content and reply markup of the message"
)
QUERY_TOO_OLD = "query is too old and response timeout expired or query ID is invalid"
POLL_CONFLICT = (
    "Conflict: terminated by other getUpdates request; make sure that only one bot instance "
    "is running"
)
WEBHOOK_CONFLICT = (
    "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to "
    "delete the webhook first"
)

_PHRASES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


class ApiError(Exception):
    """A failed Bot API call, carrying exactly what Telegram would put on the wire.

    `body`, when set, replaces the JSON envelope: Telegram's front end answers some
    outages (502/504) with an HTML page, and clients must survive that too.
    """

    def __init__(
        self,
        status: int,
        description: str,
        *,
        retry_after: int | None = None,
        body: str | None = None,
    ) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.retry_after = retry_after
        self.body = body

    def payload(self) -> JSON:
        """The `{"ok": false, ...}` envelope Telegram answers failures with."""
        data: JSON = {"ok": False, "error_code": self.status, "description": self.description}
        if self.retry_after is not None:
            data["parameters"] = {"retry_after": self.retry_after}
        return data


def phrase(status: int) -> str:
    """Telegram's prefix for a status ("Bad Request", ...), used for default descriptions."""
    return _PHRASES.get(status, "Error")


def bad_request(detail: str) -> ApiError:
    """400 with Telegram's "Bad Request: " prefix."""
    return ApiError(400, f"Bad Request: {detail}")


def forbidden(detail: str) -> ApiError:
    """403 with Telegram's "Forbidden: " prefix."""
    return ApiError(403, f"Forbidden: {detail}")


def too_many_requests(retry_after: int) -> ApiError:
    """429 flood-control answer; clients read `parameters.retry_after`, not the text."""
    return ApiError(429, f"Too Many Requests: retry after {retry_after}", retry_after=retry_after)


def unauthorized() -> ApiError:
    """What Telegram says to a well-formed token it does not know."""
    return ApiError(401, "Unauthorized")


def not_found() -> ApiError:
    """What Telegram says to unknown methods, paths and malformed tokens."""
    return ApiError(404, "Not Found")


def can_t_parse_entities(detail: str) -> ApiError:
    """Markup errors: Telegram prefixes the parser's message with this phrase."""
    return bad_request(f"can't parse entities: {detail}")
