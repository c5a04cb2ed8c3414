"""Receiving updates through the durable inbox (`storage.inbox.sqlite`): stored, then acknowledged,
then processed from the inbox and marked processed once their handling has finished.

`Intake.receive` is the one door for updates, from long polling (`bot.polling`) and from
the webhook alike:

1. The updates are stored in ONE transaction. Only if that committed may the caller
   acknowledge them (advance the `getUpdates` offset, answer the webhook 200). An update
   already stored (delivered again) is not processed again.
2. Each new update is processed as a task: PTB's handlers run (`process_update`), and the
   update counts as handled when they AND every task they started for it (the chat's
   queued run, `Application.create_task`) have finished — then it is marked processed.
   A message waiting in its chat's queue behind a slow run is therefore still unprocessed
   in the inbox if the process dies: the next owner processes it.
3. Storage unavailable (locked, read-only, full): nothing is acknowledged, so Telegram
   keeps the update and delivers it again. It is still handled once in memory — the
   handlers then answer "busy", as they do for any storage fault — and handled for real
   when it can be stored. The real handling waits for the in-memory one to end first.
   What is stored is the update as received, except a `/start <token>`: stored without its
   token (`bot.link.stored_update`), since that is a credential.

Processed, never twice. What a crash between an update's handling and its mark could
repeat is a run: its tool calls (a cancellation) are the side effects that matter. A run
started while handling an update has an id derived from it (`storage.inbox.sqlite.
run_id_for_update`, set for the handling through `RUN_ID_FOR_UPDATE`), and every handling
first checks whether that run exists: if it does, its first commit already happened, the
run is recovery's to finish, and the update is only marked. A button press is claimed
once by the run store (a repeated press is "already handled"). What may repeat, once, is
a reply that starts no run (/help, "text only", a toast) whose process died after sending
it and before the mark — like a Telegram client-side timeout, the documented exception.

Claims: the storing process owns its updates (`owner`) for a lease it renews every
`lease_s / 3` (`Keeper`); every process sweeps for updates whose claim ran out, or whose
owner is a dead process on this machine, and takes them atomically — so after a crash the
restarted process (or a standby, or another webhook replica) processes them, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

from telegram import Bot, Update
from telegram.error import TelegramError
from telegram.ext import Application

from agent_core.logcontext import log_fields
from bot import metrics
from bot.link import stored_update
from bot.texts import language_of, say
from storage.db import StorageUnavailable
from storage.inbox.sqlite import RUN_ID_FOR_UPDATE, Inbox, Received, run_id_for_update
from storage.store import RunStore

log = logging.getLogger(__name__)

T = TypeVar("T")
Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

DEFAULT_LEASE_S = 3.0
DEFAULT_KEEP_S = 24 * 3600.0  # Telegram keeps an unacknowledged update for a day
DEFAULT_CHAT_QUEUE_MAX = 20  # a chat's updates in hand at once; the rest wait in the inbox
PRUNE_EVERY_S = 600.0
MAX_UPDATE_ID = 2**63 - 1  # the inbox's column: a signed 64-bit integer, on both databases


def storable_update_id(value: object) -> bool:
    """Whether `value` is an update id the inbox can store (an int, 0 to 2^63 - 1)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_UPDATE_ID


@functools.cache
def machine() -> str:
    """Where this process's pid means something: the host name and, on Linux, the pid
    namespace (two containers may share a host name, never a pid namespace)."""
    try:
        namespace = f"/{os.stat('/proc/self/ns/pid').st_ino}"
    except OSError:
        namespace = ""
    return f"{socket.gethostname()}{namespace}"


def new_owner() -> str:
    """This process's name in leases and claims: its machine and pid (a restart on the same
    machine sees at once that a holder's process is gone) and a random part (pids are
    reused)."""
    return f"{machine()}:{os.getpid()}:{secrets.token_hex(3)}"


def owner_is_dead(owner: str, here: str | None = None) -> bool:
    """True only when `owner` certainly names a process that no longer exists: one of this
    machine's pids (same pid namespace) that is gone. Another machine's owner is never
    judged here: its lease expiry is the only evidence."""
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != (here or machine()) or not parts[1].isdigit():
        return False
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


# -- tasks started for an update ----------------------------------------------------------

_TRACKED: ContextVar[set[asyncio.Task[Any]] | None] = ContextVar("stepwise_tracked", default=None)


class TrackingApplication(Application[Any, Any, Any, Any, Any, Any]):
    """PTB's Application, remembering every task a handler starts for the update being
    handled (and the tasks those start): the update is handled when all have finished.

    Tasks inherit the context they are created in, so the set of the update's handling
    reaches every task started under it, however deep. `started` holds every such task
    still running, of every update: what a shutdown past its deadline cancels
    (`bot.shutdown`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.started: set[asyncio.Task[Any]] = set()

    def create_task(
        self,
        coroutine: Generator[asyncio.Future[object], None, T] | Awaitable[T],
        update: object | None = None,
        *,
        name: str | None = None,
    ) -> asyncio.Task[T]:
        task = super().create_task(coroutine, update, name=name)
        self.started.add(task)
        task.add_done_callback(self.started.discard)
        tracked = _TRACKED.get()
        if tracked is not None:
            tracked.add(task)
        return task


async def _all_done(tracked: set[asyncio.Task[Any]]) -> None:
    while pending := {t for t in tracked if not t.done()}:
        await asyncio.wait(pending)


# -- the intake ----------------------------------------------------------------------------


class Intake:
    """Stores, processes and marks updates (see the module's docstring)."""

    def __init__(
        self,
        inbox: Inbox,
        application: Application[Any, Any, Any, Any, Any, Any],
        store: RunStore,
        *,
        owner: str,
        lease_s: float = DEFAULT_LEASE_S,
        clock: Clock = time.time,
        chat_queue_max: int = DEFAULT_CHAT_QUEUE_MAX,
    ) -> None:
        self.inbox = inbox
        self.application = application
        self.store = store
        self.owner = owner
        self.lease_s = lease_s
        self.clock = clock
        # Bounded chat queues: at most `chat_queue_max` updates of one chat in hand (each a
        # task, its update, its chat's queued work); the rest are parked in the inbox and
        # taken back as the chat's earlier ones finish. Only counts and chat ids are here.
        self.chat_queue_max = chat_queue_max
        self._in_hand: dict[int, int] = {}  # chat id -> its updates being handled
        self._parked: set[int] = set()  # chats with updates parked in the inbox
        self._admitting = asyncio.Lock()  # park / unpark decisions, one at a time
        self._unstored: dict[int, asyncio.Task[None]] = {}  # handled in memory only
        self._handling: set[int] = set()  # stored updates being handled (claims to renew)
        self._working: set[asyncio.Task[None]] = set()
        # Stopping: updates other processes left are no longer taken (`replay`).
        self.stopping = False

    @property
    def bot(self) -> Bot:
        bot: Bot = self.application.bot
        return bot

    async def receive(self, updates: Sequence[Update]) -> bool:
        """Store `updates`, then process the new ones; False (acknowledge nothing) when they
        could not be stored — each is then handled once in memory (the customer hears
        "busy") and will be delivered again."""
        unstorable = [u.update_id for u in updates if not storable_update_id(u.update_id)]
        if unstorable:
            # Never stored, so never answered: handled in memory, each redelivery would be
            # answered again. (The webhook refuses them before they get here: `bot.webhook`.)
            log.warning(
                "inbox: update_id(s) %s outside 0 to 2^63-1: dropped, not answered", unstorable
            )
            updates = [u for u in updates if storable_update_id(u.update_id)]
        if not updates:
            return True
        now = self.clock()
        # A `/start <token>` is stored without its token: a credential never reaches the
        # disk (`bot.link`); the handling below reads the update in memory, token and all.
        received = [Received(u.update_id, stored_update(u)) for u in updates]
        try:
            new = set(await self.inbox.store(received, self.owner, now, now + self.lease_s))
        except StorageUnavailable as exc:
            log.warning("inbox: %d update(s) not stored, not acknowledged: %s", len(updates), exc)
            for update in updates:
                if update.update_id not in self._unstored:
                    handling = self._handle(update, stored=False, check=False)
                    self._unstored[update.update_id] = self._spawn(handling)
            return False
        await self._admit([u for u in updates if u.update_id in new], replayed=False)
        return True

    async def _admit(self, updates: Sequence[Update], *, replayed: bool) -> None:
        """Start each update, in order, unless its chat already has its cap in hand or has
        updates parked (then it is parked behind them, so the chat's order holds). A chat
        that starts parking is told once to slow down."""
        parked: dict[int, list[Update]] = {}
        async with self._admitting:
            for update in updates:
                chat_id = _chat_of(update)
                full = chat_id is not None and (
                    chat_id in self._parked or self._in_hand.get(chat_id, 0) >= self.chat_queue_max
                )
                if chat_id is None or not full:
                    # A replayed update may have been handled before: its run is looked for.
                    self._start(update, check=replayed or update.update_id in self._unstored)
                    continue
                parked.setdefault(chat_id, []).append(update)
            for chat_id, waiting in parked.items():
                ids = [u.update_id for u in waiting]
                try:
                    await self.inbox.park(self.owner, chat_id, ids)
                except StorageUnavailable as exc:
                    # Still claimed: once the claim runs out a sweep takes them as usual.
                    log.warning("inbox: %d update(s) of a full chat not parked: %s", len(ids), exc)
                    continue
                metrics.INBOX_PARKED.inc(len(ids))
                if chat_id not in self._parked:
                    self._parked.add(chat_id)
                    log.warning(
                        "inbox: chat %d has %d updates in hand: parking",
                        chat_id,
                        self.chat_queue_max,
                    )
                    self._spawn(self._slow_down(chat_id, waiting[0]))
        for chat_id in parked:
            self._spawn(self._unpark(chat_id))  # its earlier ones may have finished meanwhile

    async def _slow_down(self, chat_id: int, update: Update) -> None:
        """One polite note when a chat starts parking: nothing is lost, it comes in order."""
        message, user = update.effective_message, update.effective_user
        text = message.text if message is not None else None
        language = language_of(text, user.language_code if user is not None else None)
        try:
            await self.bot.send_message(chat_id, say("slow_down", language))
        except TelegramError as exc:
            log.info("slow-down note not sent: %s", exc)

    async def _unpark(self, chat_id: int) -> None:
        """Start as many of the chat's parked updates as its cap has room for, oldest
        first; the chat stops parking once none are left."""
        try:
            async with self._admitting:
                if chat_id not in self._parked:
                    return
                room = self.chat_queue_max - self._in_hand.get(chat_id, 0)
                if room <= 0:
                    return
                bodies = await self.inbox.unpark(self.owner, chat_id, room)
                for body in bodies:
                    self._start(Update.de_json(json.loads(body.body), self.bot), check=True)
                if len(bodies) < room:
                    self._parked.discard(chat_id)
        except StorageUnavailable as exc:
            log.warning("inbox: parked updates of a chat not taken back yet: %s", exc)

    def in_hand(self, chat_id: int) -> int:
        """How many of the chat's updates this process is handling now (at most the cap)."""
        return self._in_hand.get(chat_id, 0)

    @property
    def parked(self) -> bool:
        """Whether any chat has updates parked (their claims are renewed with the rest)."""
        return bool(self._parked)

    async def replay(self, bodies: Sequence[Received]) -> None:
        """Process updates claimed from the inbox (stored earlier, never marked), but not
        those this process is still handling; none once it is stopping (the stop gives
        their claims up, for another process: `bot.shutdown`)."""
        if self.stopping:
            return
        taken = [
            Update.de_json(json.loads(body.body), self.bot)
            for body in bodies
            if body.update_id not in self._handling
        ]
        await self._admit(taken, replayed=True)

    def handling(self) -> list[int]:
        """The stored updates being handled: their claims need renewing."""
        return sorted(self._handling)

    @property
    def working(self) -> set[asyncio.Task[None]]:
        """The handlings in progress (a shutdown past its deadline cancels them)."""
        return self._working

    async def drain(self) -> None:
        """Wait for every handling in progress (their marks written or failed)."""
        while self._working:
            await asyncio.gather(*self._working, return_exceptions=True)

    def _start(self, update: Update, *, check: bool) -> None:
        update_id = update.update_id
        chat_id = _chat_of(update)
        self._handling.add(update_id)
        if chat_id is not None:
            self._in_hand[chat_id] = self._in_hand.get(chat_id, 0) + 1
        task = self._spawn(self._timed(self._handle(update, stored=True, check=check)))

        def done(_: object) -> None:
            self._handling.discard(update_id)
            if chat_id is None:
                return
            self._in_hand[chat_id] -= 1
            if not self._in_hand[chat_id]:
                del self._in_hand[chat_id]  # forget idle chats: memory stays flat
            if chat_id in self._parked and not self.stopping:
                self._spawn(self._unpark(chat_id))

        task.add_done_callback(done)

    async def _timed(self, handling: Coroutine[Any, Any, None]) -> None:
        """A stored update's handling, its lag (stored or taken over → marked) measured."""
        started = time.monotonic()
        await handling
        metrics.INBOX_LAG.observe(time.monotonic() - started)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(work)
        self._working.add(task)
        task.add_done_callback(self._working.discard)
        return task

    async def _handle(self, update: Update, *, stored: bool, check: bool) -> None:
        """Handle `update`; `check`: it may have been handled before (replayed, or handled
        in memory while it could not be stored), so first look for the run it started.
        A first delivery goes straight to the handlers, in arrival order."""
        update_id = update.update_id
        if stored:
            earlier = self._unstored.pop(update_id, None)
            if earlier is not None:  # handled in memory while unstorable: let it finish
                await asyncio.gather(earlier, return_exceptions=True)
        run_id = run_id_for_update(self.bot.id, update_id)
        try:
            if check and await self.store.load_run(run_id) is not None:
                log.info("update %d already started run %s: marked processed", update_id, run_id)
            else:
                await self._process(update, run_id)
            if stored:
                await self.inbox.processed(update_id, self.clock())
        except StorageUnavailable as exc:
            # Not marked: the claim runs out and the update is handled again, by the run
            # check above never starting its run twice.
            log.warning("inbox: update %d not marked processed: %s", update_id, exc)
        except Exception:
            log.exception("inbox: handling update %d failed", update_id)
            if stored:
                with contextlib.suppress(StorageUnavailable):
                    await self.inbox.processed(update_id, self.clock())

    async def _process(self, update: Update, run_id: str) -> None:
        RUN_ID_FOR_UPDATE.set([run_id])
        tracked: set[asyncio.Task[Any]] = set()
        _TRACKED.set(tracked)
        application = self.application
        chat = update.effective_chat
        with log_fields(update_id=update.update_id, chat_id=chat.id if chat else None):
            await application.update_processor.process_update(
                update, application.process_update(update)
            )
            await _all_done(tracked)


def _chat_of(update: Update) -> int | None:
    """The chat whose queue an update joins (None: not a chat's, never capped)."""
    chat = update.effective_chat
    return chat.id if chat is not None else None


# -- keeping claims, sweeping, pruning ----------------------------------------------------


class Keeper:
    """Every `lease_s / 3`: renew this process's claims, take the updates whose claim ran
    out (or whose owner died), and now and then prune old processed updates."""

    def __init__(
        self,
        intake: Intake,
        *,
        keep_s: float = DEFAULT_KEEP_S,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.intake = intake
        self.keep_s = keep_s
        self.sleep = sleep
        self._pruned_at: float | None = None

    async def run(self) -> None:
        while True:
            try:
                await self.tick()
            except StorageUnavailable as exc:
                log.debug("inbox keeper: %s", exc)
            await self.sleep(self.intake.lease_s / 3)

    async def tick(self) -> None:
        intake, inbox = self.intake, self.intake.inbox
        now = intake.clock()
        until = now + intake.lease_s
        handling = intake.handling()
        if handling or intake.parked:
            await inbox.renew(intake.owner, handling, until)
        owners = await inbox.pending_owners()
        dead = sorted({o for o, _ in owners if o and o != intake.owner and owner_is_dead(o)})
        if any(o is None or o in dead or (u or 0) < now for o, u in owners):
            claimed = await inbox.claim_stale(intake.owner, now, until, dead)
            if claimed:
                log.warning("inbox: processing %d update(s) a stopped process left", len(claimed))
                metrics.INBOX_TAKEOVERS.inc(len(claimed))
                await intake.replay(claimed)
        if self._pruned_at is None or now - self._pruned_at >= PRUNE_EVERY_S:
            self._pruned_at = now
            await inbox.prune(now - self.keep_s)
