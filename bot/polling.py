"""Long polling held by one process at a time, acknowledging only what the inbox stored.

Telegram answers `409 Conflict` to two processes calling `getUpdates` with one token, so
polling is a lease (`storage.inbox.sqlite`, lease `poller`): the holder renews it every
`lease_s / 3`; every other process (a hot standby) tries to take it as often, which
succeeds once the holder's lease ran out — or at once when the holder is a process of this
machine that no longer exists. Each logs one line when it starts waiting and one when it
takes over. The holder stops polling (cancelling a long poll in flight) as soon as it
cannot show a renewal younger than the lease, before anybody else may take it.

A holder polls, or gives the lease up. `deleteWebhook` (once, at the first takeover) runs
in the polling task with the Bot API's normal timeout, never under the lease renewal's
bound: cut off there, it was retried at every renewal while the lease stayed held and
nothing polled. And a holder whose polling made no progress for a lease (no getUpdates
started or answered, none in flight within its own timeout) releases the lease, logs why,
and rests a lease so a standby can take over; `/readyz` tells that state from a standby.

The offset is ours, not PTB's Updater's: `getUpdates(offset=…)` acknowledges everything
below the offset, so it only ever moves past updates `Intake.receive` stored. While the
database refuses writes, the holder keeps polling without acknowledging (the customer
hears "busy" once per update, `bot.inbox`), pausing `RETRY_S` between tries, as long as it
can read that the lease is free, expired or its own (`may_poll_degraded`; a process can
also start polling so, on a read-only disk): nothing is stored, so nothing is
acknowledged, whoever polls. A process that cannot even read the database stops polling.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from telegram import Bot, Update
from telegram.error import Conflict, NetworkError, TelegramError

from bot import metrics
from bot.inbox import Intake, owner_is_dead
from storage.db import StorageUnavailable
from storage.inbox.sqlite import Inbox, Lease

log = logging.getLogger(__name__)

POLLER = "poller"
DEFAULT_POLL_TIMEOUT_S = 10
RETRY_S = 1.0
MAX_BACKOFF_S = 30.0


def may_poll_degraded(lease: Lease | None, me: str, now: float, dead: bool) -> bool:
    """Storage refuses the lease write: poll anyway (storing and acknowledging nothing)
    only if the lease, as last readable, is nobody's, expired, ours, or a dead process's."""
    return lease is None or lease.owner == me or lease.expires_at < now or dead


@dataclass
class Poller:
    """Takes the `poller` lease, then long-polls while it holds it (see the module)."""

    bot: Bot
    intake: Intake
    allowed_updates: list[str]
    poll_timeout_s: int = DEFAULT_POLL_TIMEOUT_S
    clock: Callable[[], float] = time.time
    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    # Told each time this process loses the lease it held (the staff alert of a lease
    # lost repeatedly, `bot.alerts`); sync and cheap.
    on_lost: Callable[[], None] | None = None

    def __post_init__(self) -> None:
        self._held = asyncio.Event()
        self._held_until = 0.0  # monotonic: polling must stop before this
        self._poll: asyncio.Task[None] | None = None
        self._offset: int | None = None
        self._waiting_for: str | None = None
        self.takeovers = 0
        # For readiness (`bot.health`): when the lease was last written or read (monotonic),
        # and why the last try failed (None: it did not).
        self.lease_seen_at: float | None = None
        self.lease_error: str | None = None
        # Progress of polling while the lease is held (monotonic): the last getUpdates
        # started or answered, or the takeover; whether a getUpdates, or the takeover's
        # deleteWebhook, is in flight (each bounded by its own timeout).
        self._progress_at = 0.0
        self._in_flight_since: float | None = None
        self._webhook_deleted = False
        self._deleting = False
        self._lease_held = False  # our last write of the lease took it
        self._resting_until = 0.0  # after releasing a stalled lease: let a standby take it
        self._stalled_for: float | None = None  # how long the last released stall lasted

    @property
    def inbox(self) -> Inbox:
        return self.intake.inbox

    @property
    def owner(self) -> str:
        return self.intake.owner

    @property
    def lease_s(self) -> float:
        return self.intake.lease_s

    def holding(self) -> bool:
        return self._held.is_set()

    def stalled_s(self) -> float | None:
        """How long this holder has made no polling progress, when that is longer than a
        lease (None: it polls, is deleting the webhook, or holds no lease)."""
        # A call in flight (deleteWebhook, a long poll) is bounded by its own timeout.
        if not self._lease_held or self._deleting or self._in_flight_since is not None:
            return None
        idle = self.monotonic() - self._progress_at
        return idle if idle > self.lease_s else None

    def lease_problem(self) -> str | None:
        """None when this process holds the poller lease and polls, or is a standby that
        could take it (its last try reached the database within a lease); else why not."""
        if (stalled := self.stalled_s()) is not None:
            return f"holds the poller lease but has not polled for {stalled:.0f} s"
        if self._stalled_for is not None and self.monotonic() < self._resting_until:
            return f"released the poller lease: had not polled for {self._stalled_for:.0f} s"
        if self.lease_error is not None:
            return self.lease_error
        if self.lease_seen_at is None:
            return "the poller lease was not tried yet"
        if self.monotonic() - self.lease_seen_at > self.lease_s:
            return "the poller lease was not tried within a lease"
        return None

    async def run(self) -> None:
        """Hold the lease and poll, until cancelled."""
        self._poll = asyncio.ensure_future(self._polling())
        try:
            while True:
                started = self.monotonic()
                # A renewal stuck behind a locked database must not let a long poll outlive
                # the lease: bounded, and the deadline is checked whatever happened.
                # (`asyncio.timeout`, not `wait_for`: on 3.11 `wait_for` can swallow the
                # cancellation that stops this loop when both happen at once.)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.lease_s / 3):
                        await self._keep_lease()
                if self._held.is_set() and self.monotonic() >= self._held_until:
                    log.warning("poller: lease not renewed in time; this process stops polling")
                    self._stop_polling()
                    self._lost()
                await self.sleep(max(0.0, started + self.lease_s / 3 - self.monotonic()))
        finally:
            self._poll.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poll

    async def release(self) -> None:
        """Give the lease up (a graceful stop): a standby takes over at its next try."""
        self._held.clear()
        self._lease_held = False
        with contextlib.suppress(StorageUnavailable):
            await self.inbox.release_lease(POLLER, self.owner)

    async def _release_stalled(self, stalled: float) -> None:
        """A holder that does not poll keeps everyone waiting: give the lease up, say why,
        and rest a lease so that a standby takes it (with none, this process does again)."""
        log.warning(
            "poller: held the lease but had not polled for %.1f s; released it for a standby",
            stalled,
        )
        self._stalled_for = stalled
        self._resting_until = self.monotonic() + self.lease_s
        self._stop_polling()
        self._lost()
        await self.release()

    # -- the lease -------------------------------------------------------------------------

    async def _keep_lease(self) -> None:
        started = self.monotonic()
        if started < self._resting_until:
            return  # released for a standby (`_release_stalled`)
        if (stalled := self.stalled_s()) is not None:
            await self._release_stalled(stalled)
            return
        now = self.clock()
        try:
            taken = await self.inbox.take_lease(POLLER, self.owner, now, now + self.lease_s)
        except StorageUnavailable as exc:
            self.lease_error = f"the poller lease cannot be written: {type(exc).__name__}"
            await self._degraded(now, started, exc)
            return
        self.lease_seen_at, self.lease_error = self.monotonic(), None
        if not taken:
            self._lease_held = False
            await self._lost_or_waiting(now)
            return
        # A renewal counts from before its write: the lease may have been measured from then.
        self._held_until = started + self.lease_s * 2 / 3
        if not self._held.is_set():
            if self._waiting_for is not None:
                log.warning("poller: took over long polling from %s", self._waiting_for)
                metrics.POLLER_TAKEOVERS.inc()
            metrics.POLLER_CHANGES.labels("holding").inc()
            metrics.POLLER_HOLDING.set(1)
            self.takeovers += 1
            self._waiting_for = None
            self._stalled_for = None
            self._progress_at, self._in_flight_since = self.monotonic(), None
            self._lease_held = True
            self._held.set()
        self._lease_held = True

    async def _delete_webhook(self) -> None:
        """As PTB's Updater does before polling: a webhook left set by an earlier
        `serve --webhook-url` would make every getUpdates fail with 409. Once per process,
        in the polling task, with the Bot API's normal timeout (a slow answer is waited
        for; only losing the lease cancels it)."""
        self._deleting = True
        try:
            await self.bot.delete_webhook(drop_pending_updates=False)
            self._webhook_deleted = True
        except TelegramError as exc:
            log.warning("poller: deleteWebhook failed (%s); polling anyway", exc)
            self._webhook_deleted = True
        finally:
            self._deleting = False
            self._progress_at = self.monotonic()

    async def _lost_or_waiting(self, now: float) -> None:
        try:
            lease = await self.inbox.lease(POLLER)
        except StorageUnavailable:
            lease = None
        holder = lease.owner if lease is not None else "another process"
        if lease is not None and owner_is_dead(lease.owner):
            # A process of this machine that is gone: take its lease now, not at expiry.
            with contextlib.suppress(StorageUnavailable):
                await self.inbox.release_lease(POLLER, lease.owner)
                self._waiting_for = self._waiting_for or lease.owner
                await self._keep_lease()
                return
        if self._held.is_set():
            log.warning("poller: %s holds long polling now; this process stops polling", holder)
            self._stop_polling()
            self._lost()
        if self._waiting_for is None:
            log.warning("poller: waiting, %s holds long polling (hot standby)", holder)
            self._waiting_for = holder

    async def _degraded(self, now: float, started: float, exc: StorageUnavailable) -> None:
        """The lease cannot be written. Poll anyway only if the lease row can be read and
        nobody else holds it (a read-only disk at start: every process is in the same
        boat, and nothing is acknowledged). Unreadable (cut off from the database): no
        renewal, so polling stops at the deadline (`run`), before a standby may take over."""
        try:
            lease = await self.inbox.lease(POLLER)
        except StorageUnavailable:
            log.debug("poller: lease neither renewed nor readable: %s", exc)
            return
        dead = lease is not None and owner_is_dead(lease.owner)
        if not may_poll_degraded(lease, self.owner, now, dead):
            return
        if not self._held.is_set():
            log.warning("poller: polling without a lease, storage unavailable: %s", exc)
        self._held_until = started + self.lease_s * 2 / 3
        self._held.set()

    def _lost(self) -> None:
        if self.on_lost is not None:
            self.on_lost()

    def _stop_polling(self) -> None:
        if self._held.is_set():
            metrics.POLLER_CHANGES.labels("standby").inc()
        metrics.POLLER_HOLDING.set(0)
        self._held.clear()
        self._in_flight_since, self._deleting = None, False
        if self._poll is not None and not self._poll.done():
            self._poll.cancel()
            self._poll = asyncio.ensure_future(self._polling())

    # -- polling ---------------------------------------------------------------------------

    async def _polling(self) -> None:
        failures = 0
        while True:
            await self._held.wait()
            if self.monotonic() >= self._held_until:
                self._held.clear()  # not renewed in time: stop until the lease is ours again
                continue
            if not self._webhook_deleted:
                await self._delete_webhook()
                continue  # the lease may have moved on meanwhile: checked again
            try:
                updates = await self._get_updates()
            except Conflict as exc:
                failures += 1
                log.warning("poller: Telegram reports another poller (%s); backing off", exc)
                await self.sleep(min(MAX_BACKOFF_S, RETRY_S * failures))
                continue
            except (NetworkError, TelegramError) as exc:
                failures += 1
                log.warning("poller: getUpdates failed (%s); retrying", exc)
                await self.sleep(min(MAX_BACKOFF_S, RETRY_S * 2 ** min(failures, 5)))
                continue
            failures = 0
            if not updates:
                continue
            if await self.intake.receive(updates):
                self._offset = updates[-1].update_id + 1
            else:
                await self.sleep(RETRY_S)  # storage down: nothing acknowledged, try again

    async def _get_updates(self) -> tuple[Update, ...]:
        # getUpdates bypasses the rate limiter (PTB), where the other calls are counted.
        self._in_flight_since = self._progress_at = self.monotonic()
        try:
            updates = await self.bot.get_updates(
                offset=self._offset,
                timeout=self.poll_timeout_s,
                allowed_updates=self.allowed_updates,
            )
        except Exception as exc:
            metrics.count_telegram_call("getUpdates", exc)
            raise
        finally:
            self._in_flight_since, self._progress_at = None, self.monotonic()
        metrics.count_telegram_call("getUpdates", None)
        return updates
