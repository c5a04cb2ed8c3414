"""Webhook delivery: the stand-in POSTs each update to the bot, as Telegram does.

With a webhook set, Telegram sends every update as one JSON POST to the URL (with the
`X-Telegram-Bot-Api-Secret-Token` header when a secret token was set), in order, and
counts it delivered on any 2xx answer. On a non-2xx answer or a connection failure it
keeps the update and tries again later, waiting longer each time (telegram-bot-api's
WebhookActor starts at 1 s and doubles), and records the failure for getWebhookInfo's
`last_error_date` / `last_error_message`. Telegram gives up on an update after a day;
the stand-in gives up after `WebhookRetry.attempts`, so a test never waits that long.
deleteWebhook (or setWebhook with another URL) ends delivery to the old URL at once.

Waiting between attempts uses the stand-in's change signal, so stopping the server or
deleting the webhook ends a wait immediately rather than after the delay.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp

from .changes import ChangeSignal
from .errors import bad_request
from .records import Update, WebhookDelivery
from .state import BotState

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
WEBHOOK_PORTS = (443, 80, 88, 8443)
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_SECRET = re.compile(r"[A-Za-z0-9_-]*")
_MAX_SECRET = 256


def check_webhook_url(url: str) -> None:
    """Telegram's rules for a webhook URL (plain http is allowed to loopback only)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise bad_request("invalid webhook URL specified") from None
    scheme, host = parts.scheme.lower(), parts.hostname or ""
    if not host or scheme not in ("http", "https"):
        raise bad_request("invalid webhook URL specified")
    if scheme == "http" and host not in _LOOPBACK:
        raise bad_request("bad webhook: An HTTPS URL must be provided for webhook")
    if scheme == "https" and (port or 443) not in WEBHOOK_PORTS:
        raise bad_request("bad webhook: Webhook can be set up only on ports 80, 88, 443 or 8443")


def check_secret_token(secret: str) -> None:
    """1-256 characters of `A-Z a-z 0-9 _ -` (empty: no secret), in Telegram's words."""
    if len(secret) > _MAX_SECRET:
        raise bad_request("secret token is too long")
    if not _SECRET.fullmatch(secret):
        raise bad_request("secret token contains unallowed characters")


@dataclass(frozen=True)
class WebhookRetry:
    """How often, and how patiently, an update the webhook refused is sent again.

    The defaults follow Telegram (first retry after 1 s, then doubling); tests that
    exercise retries pass shorter delays.
    """

    attempts: int = 6
    first_delay: float = 1.0
    factor: float = 2.0
    max_delay: float = 60.0
    timeout: float = 10.0  # seconds the bot may take to answer one POST

    def delay(self, failures: int) -> float:
        """Seconds to wait after the `failures`-th failed attempt at one update."""
        return min(self.max_delay, self.first_delay * self.factor ** (failures - 1))


class WebhookSender:
    """Delivers queued updates to the webhook while one is set, until the server stops."""

    def __init__(
        self,
        state: BotState,
        changes: ChangeSignal,
        closing: Callable[[], bool],
        retry: WebhookRetry,
    ) -> None:
        self.state = state
        self.changes = changes
        self.closing = closing
        self.retry = retry
        self._failures: dict[int, int] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Begin delivering in the background (the server calls this on start)."""
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """End delivery, abandoning a POST still in flight."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    def _next(self) -> Update | None:
        state = self.state
        return state.updates[0] if state.webhook_url and state.updates else None

    async def _run(self) -> None:
        timeout = aiohttp.ClientTimeout(total=self.retry.timeout)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            while True:
                await self.changes.wait_until(
                    lambda: self.closing() or self._next() is not None, None
                )
                update = self._next()
                if self.closing() or update is None:
                    return
                await self._attempt(session, update)

    async def _attempt(self, session: aiohttp.ClientSession, update: Update) -> None:
        state = self.state
        url, secret = state.webhook_url, state.webhook_secret
        status, error = await _post(session, url, secret, update)
        delivery = WebhookDelivery(
            update.update_id, update.to_api(), url, status, error, state.clock()
        )
        state.webhook_deliveries.append(delivery)
        if delivery.ok:
            self._failures.pop(update.update_id, None)
            state.updates = [queued for queued in state.updates if queued is not update]
            await self.changes.notify()
            return
        failures = self._failures.get(update.update_id, 0) + 1
        self._failures[update.update_id] = failures
        state.webhook_error = (state.date(), error or "")
        if failures >= self.retry.attempts:  # give up on this update, as Telegram does
            self._failures.pop(update.update_id, None)
            state.updates = [queued for queued in state.updates if queued is not update]
        await self.changes.notify()
        if failures < self.retry.attempts:
            await self.changes.wait_until(
                lambda: self.closing() or state.webhook_url != url, self.retry.delay(failures)
            )


async def _post(
    session: aiohttp.ClientSession, url: str, secret: str, update: Update
) -> tuple[int | None, str | None]:
    """POST one update; the bot's status, or None and what went wrong, in Telegram's words."""
    headers = {SECRET_HEADER: secret} if secret else {}
    try:
        async with session.post(url, json=update.to_api(), headers=headers) as response:
            await response.read()
            if 200 <= response.status < 300:
                return response.status, None
            reason = response.reason or ""
            return response.status, f"Wrong response from the webhook: {response.status} {reason}"
    except TimeoutError:
        return None, "Read timeout expired"
    except aiohttp.ClientConnectionError as exc:
        refused = isinstance(exc, aiohttp.ClientConnectorError)
        return None, "Connection refused" if refused else f"Connection failed: {exc}"
