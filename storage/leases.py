"""Run leases: which process drives a run (or owes the delivery of what it committed), until when.

Several `stepwise` processes may share one database (a rolling deploy, replicas, an operator
starting a second one by mistake). A run is driven by ONE of them: the one whose id is in
the run's `lease_owner`, until `lease_until` (UTC, `storage.tables.ts` text). Every
process has its own id (`process_owner`: host, pid and a random part, so a restarted
process never mistakes its predecessor's runs for its own).

When a lease is taken, kept and given back
-------------------------------------------
* Taken when a run starts being driven: a new run (its first commit, `run_planned`), a
  confirmed or declined pause (the claim's own UPDATE), a recovered run (`take`).
* Renewed while this process works on it: one statement per process every `length / 3`
  for all the runs it holds (`LeaseKeeper`), not one per journal commit. Renewing on each
  commit would be free on the journal's path but not correct: a tool call (a slow shop, an
  HTTP backend timing out, a retry's backoff) can outlast the lease with no commit in
  between, and another process would then drive the same step. The keeper renews only the
  runs the agent is working on right now (`agent_core.agent.Working`), so a drive that died
  on an exception lets its lease lapse and is recovered, instead of being kept forever.
  A claimed run is held from the claim on, not only once it is driven: the bot queues its
  proceed behind other work in the chat (a slow read), and a lease lapsing in that queue
  let recovery drive the run while the queued proceed still meant to (issue 20).
* Never driven from a stale copy: a claimed run's drive starts with `still_held` (the
  lease is still this process's, `held_here`), so the copy read at the claim is driven
  only while nobody else can have written the run, never after another process took it
  over. A read, not a write, while the lease is live: nobody may take it before it
  lapses, and a confirmed run costs no commit more.
* Kept when a drive ends with something to deliver (the run pauses, finishes, asks a
  clarifying question) in a process that delivers (the bot: `keep_for_delivery`), and
  given back by the delivered mark (`answer_delivered`, `prompt_shown`, or the customer
  having blocked the bot). So a lease on a run that is no longer `running` means "an
  answer or prompt is owed and not yet delivered": a crash between the commit and the
  send leaves it to expire, and another process (or the restarted one) takes it and
  delivers once. A process that does not deliver through Telegram (the CLI) gives the
  lease back at the end of the drive: the bot never sends answers of runs it did not owe.

Taking is one conditional UPDATE per run (`take_sql`): compare-and-set on the
`(lease_owner, lease_until)` the taker read, so of two processes that saw the same expired
lease, exactly one changes it (the other's UPDATE matches nothing). Which leases may be
taken is `takeable`: expired ones, none at all (runs written before leases existed), and
those of a process that is provably dead (same host, its pid gone): a restarted bot picks
up its predecessor's runs at once instead of waiting out the lease.

Known limit (no fencing): a process that stalls longer than the lease (a frozen VM) can
find its run taken over and still write to it when it wakes; its tool calls repeat with
the same idempotency key, so a backend that honours the key still acts once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from agent_core.models import EventKind, RunStatus, utcnow
from storage.db import StorageUnavailable
from storage.tables import ts

log = logging.getLogger(__name__)

# A store opened without a `Lease` (tests, tools); the runtime passes `STEPWISE_LEASE`
# (`Settings.lease_s`, 3 s by default, shared with the poller's and the inbox's leases).
DEFAULT_LEASE = timedelta(seconds=30)
# Marks that end a delivery owed on a run that is no longer running (see the module doc).
DELIVERY_ENDS = frozenset({EventKind.ANSWER_DELIVERED, EventKind.CUSTOMER_BLOCKED})
LEASE_COLUMNS = ("lease_owner", "lease_until")


def process_owner(host: str | None = None, pid: int | None = None, token: str | None = None) -> str:
    """This process's owner id: `host:pid:random`."""
    host = host if host is not None else socket.gethostname()
    pid = pid if pid is not None else os.getpid()
    return f"{host}:{pid}:{token if token is not None else secrets.token_hex(4)}"


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this machine (signal 0 probes only)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


@dataclass
class Lease:
    """This process's side of the leases: its id, how long a lease lasts, its clock.

    `keep_for_delivery` is set by the bot once it delivers the runs' messages (see the
    module doc); it is read whenever a drive ends.
    """

    owner: str
    length: timedelta = DEFAULT_LEASE
    clock: Callable[[], datetime] = utcnow
    keep_for_delivery: bool = False
    pid_alive: Callable[[int], bool] = pid_alive

    def now(self) -> str:
        stamp = ts(self.clock())
        assert stamp is not None
        return stamp

    def until(self) -> str:
        stamp = ts(self.clock() + self.length)
        assert stamp is not None
        return stamp

    def columns(self, status: RunStatus) -> dict[str, str | None]:
        """The lease a commit leaves on a run in `status` (see the module doc)."""
        if status is RunStatus.RUNNING or self.keep_for_delivery:
            return {"lease_owner": self.owner, "lease_until": self.until()}
        return {"lease_owner": None, "lease_until": None}

    def owner_dead(self, owner: str) -> bool:
        """`owner` is another incarnation on this host whose process is gone."""
        host, _, rest = owner.partition(":")
        me_host, _, me_rest = self.owner.partition(":")
        pid_text, my_pid = rest.partition(":")[0], me_rest.partition(":")[0]
        if host != me_host or not pid_text.isdigit() or owner == self.owner:
            return False
        if pid_text == my_pid:
            return True  # our pid, another random part: a predecessor (a container's pid 1)
        return not self.pid_alive(int(pid_text))


@dataclass(frozen=True)
class LeaseRow:
    """A run's lease as a taker read it: what the compare-and-set compares."""

    run_id: str
    status: str
    owner: str | None
    until: str | None


def takeable(row: LeaseRow, lease: Lease, now: str, abandoned: Collection[str] = ()) -> bool:
    """May `lease`'s process take this run? Running runs without a lease (written before
    leases), expired leases, leases of a dead process on this host, and this process's own
    leases on runs whose drive here failed (`abandoned`)."""
    if row.owner is None:
        return row.status == RunStatus.RUNNING.value
    if row.until is None or row.until <= now:
        return True
    if row.owner == lease.owner:
        return row.run_id in abandoned
    return lease.owner_dead(row.owner)


def to_take(
    rows: Sequence[LeaseRow],
    lease: Lease,
    *,
    since: str | None = None,
    updated: Sequence[str] = (),
    abandoned: Collection[str] = (),
) -> list[dict[str, str | None]]:
    """The compare-and-set parameters for the rows `lease`'s process may take (`takeable`);
    with `since`, only rows whose `updated` stamp (same order as `rows`) is that recent."""
    now = lease.now()
    return [
        take_params(row, lease)
        for n, row in enumerate(rows)
        if takeable(row, lease, now, abandoned) and (since is None or updated[n] >= since)
    ]


def take_params(row: LeaseRow, lease: Lease) -> dict[str, str | None]:
    return {
        "id": row.run_id,
        "seen_status": row.status,
        "me": lease.owner,
        "until": lease.until(),
        "seen_owner": row.owner,
        "seen_until": row.until,
    }


def live_others(owners: Sequence[tuple[str, str]], lease: Lease) -> list[str]:
    """The owners (from heartbeats: owner, alive_until) that are live and not this process."""
    now = lease.now()
    return sorted(
        {
            owner
            for owner, alive_until in owners
            if owner != lease.owner and alive_until >= now and not lease.owner_dead(owner)
        }
    )


def other_process_line(others: Sequence[str]) -> str:
    """The one warning a process logs when it finds others live on its database."""
    names = ", ".join(":".join(o.split(":")[:2]) for o in others)
    return f"another stepwise process ({names}) is live on this database; runs are shared by lease"


class LeaseStore(Protocol):
    """What the keeper needs from a run store."""

    lease: Lease

    async def renew_leases(self, run_ids: Collection[str], *, heartbeat: bool = True) -> None: ...


class LeaseKeeper:
    """Renews this process's leases (and its heartbeat) every `length / 3`.

    `held` names the runs to renew (the agent's `Working`); a renewal that fails (storage
    trouble) is logged and tried again at the next tick: a lease survives two
    failed renewals. `heartbeat` is for processes that stay up (the bot, set when it
    starts recovering): a one-shot CLI command writes nothing while it holds no run.
    """

    def __init__(
        self,
        store: LeaseStore,
        held: Callable[[], Collection[str]],
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._store = store
        self._held = held
        self._sleep = sleep
        self._task: asyncio.Task[None] | None = None
        self._beat: asyncio.Task[None] | None = None
        self.heartbeat = False
        # Told of each renewal's result (True: written), for the staff alert of leases
        # failing to renew (`bot.alerts`); sync and cheap.
        self.on_renewal: Callable[[bool], None] | None = None

    @property
    def every_s(self) -> float:
        return self._store.lease.length.total_seconds() / 3

    async def tick(self) -> None:
        held = self._held()
        if not held and not self.heartbeat:
            return
        ok = False
        try:
            await self._store.renew_leases(held, heartbeat=self.heartbeat)
            ok = True
        except StorageUnavailable:
            log.warning("could not renew run leases (storage unavailable); retrying")
        except Exception:  # never end the loop: a lapsed lease means another process drives
            log.exception("could not renew run leases; retrying")
        if self.on_renewal is not None:
            self.on_renewal(ok)

    async def run(self) -> None:
        while True:
            await self.tick()
            await self._sleep(self.every_s)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self.run())

    def start_heartbeat(self) -> None:
        """From now on, write the heartbeat every tick, and once at once (other processes
        starting now look for it)."""
        self.heartbeat = True
        self._beat = asyncio.get_running_loop().create_task(self.tick())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


# -- statements both backends run (SQLite's spelling; `storage.pg.pg_sql` converts) --------

# Running runs: the candidates for recovery (few: `runs_by_status`).
SELECT_RUNNING = (
    "SELECT id, status, lease_owner, lease_until FROM runs WHERE status = 'running'"
    " ORDER BY created_at"
)
# The drive of a claimed run starts by reading its lease (`still_held`, `held_here`).
SELECT_LEASE = "SELECT lease_owner, lease_until FROM runs WHERE id = ? AND status = 'running'"
# A lease of ours that lapsed (renewals failed) is kept only if nobody took it meanwhile: a
# take changes the owner, and compares the `lease_until` it read, so of this UPDATE and a
# take, whichever commits first wins and the other matches nothing.
KEEP_HELD = (
    "UPDATE runs SET lease_until = :until"
    " WHERE id = :id AND lease_owner = :me AND status = 'running'"
)


def held_here(row: tuple[Any, Any] | None, lease: Lease) -> bool | None:
    """Whether a running run's lease (`SELECT_LEASE`'s row) is this process's: True while
    it is live (no other process may take it before it lapses, and the keeper renews it:
    no write needed), None when it is ours but lapsed (`KEEP_HELD` decides), False when
    another process owns it or the run is not running."""
    if row is None or row[0] != lease.owner:
        return False
    if row[1] is not None and str(row[1]) > lease.now():
        return True
    return None


# Runs no longer running that still hold a lease: a delivery owed (the partial index).
SELECT_OWED = (
    "SELECT id, status, lease_owner, lease_until, updated_at FROM runs"
    " WHERE lease_owner IS NOT NULL AND status <> 'running' ORDER BY updated_at"
)
# A delivered mark (or a blocked customer) ends the delivery owed, never a drive.
RELEASE_DELIVERY = (
    "UPDATE runs SET lease_owner = NULL, lease_until = NULL"
    " WHERE id = :run_id AND status <> 'running'"
)
# Deliveries owed for longer than the redelivery window are given up (one line logged).
GIVE_UP = (
    "UPDATE runs SET lease_owner = NULL, lease_until = NULL"
    " WHERE lease_owner IS NOT NULL AND status <> 'running' AND updated_at < :since"
)
HEARTBEAT = (
    "INSERT INTO process_heartbeats (owner, alive_until) VALUES (:me, :until)"
    " ON CONFLICT (owner) DO UPDATE SET alive_until = excluded.alive_until"
)
FORGET_DEAD = "DELETE FROM process_heartbeats WHERE alive_until < :now"
SELECT_HEARTBEATS = "SELECT owner, alive_until FROM process_heartbeats"
# A process that stops cleanly lets its leases lapse at once and says it is gone.
LET_GO = "UPDATE runs SET lease_until = :now WHERE lease_owner = :me"
GONE = "DELETE FROM process_heartbeats WHERE owner = :me"


def rows_of(records: Sequence[Any]) -> list[LeaseRow]:
    """`SELECT id, status, lease_owner, lease_until …` rows as `LeaseRow`s."""
    return [
        LeaseRow(
            run_id=str(r[0]),
            status=str(r[1]),
            owner=None if r[2] is None else str(r[2]),
            until=None if r[3] is None else str(r[3]),
        )
        for r in records
    ]
