"""Section 8: crash soak — customers keep cancelling orders while replicas are SIGKILLed.

Two placements, each on an in-process `StandIn` (Telegram's stand-in) and a local HTTP shop:

* `webhook`: 3 `stepwise serve --webhook-url` replicas on one fresh PostgreSQL schema. The
  stand-in delivers each update to ONE URL, as Telegram does; a tiny round-robin proxy
  (`RoundRobin`) passes each POST to the next replica, and answers 502 when that replica is
  down, so the stand-in delivers the update again later (`standin/webhook.py`, Telegram's
  1 s doubling backoff), most likely to another replica.
* `polling`: 2 `stepwise serve` long-polling replicas on one SQLite file; the poller lease
  decides which one polls (`bot/polling.py`).

The shop is an HTTP tools backend (`STEPWISE_TOOLS`, `Shop`): the figure for side effects
is POSTs counted where they arrive, not rows in a ledger. Every replica's start gets a
tools file of its own whose URLs carry a tag (`r<slot>g<start>`), so each POST says which
process sent it, and a repeated POST can be matched with the kills around it.

Customers: N private chats; each sends "cancel order X" (its own pending orders, one per
flow), waits for the Confirm prompt, presses Confirm, waits for "Order X has been
cancelled.", then starts its next flow after a short pause; customers never re-send. A
killer SIGKILLs a random replica at random moments (any point: mid-start-up, mid-POST,
mid-run) and starts it again at once. New flows stop once the kills are done; the flows in
hand finish (each wait is bounded: `FLOW_TIMEOUT_S`), the system settles, then it counts:

* lost messages: a customer message that never got its Confirm prompt, or a Confirm press
  never acted on (the run is still paused); lost answers: a run that finished (the shop
  was asked) while the customer was never told;
* duplicate answers: a chat showing the answer for one order more than once;
* extra cancel POSTs: POSTs for an order beyond the first (same or another
  Idempotency-Key), and cancels confirmed by the answer without any POST;
* runs without a holder: runs still `running`, or holding a lease that has lapsed (an
  owed delivery nobody took), after the settle; with no lease columns (before leases
  existed) every `running` run counts;
* updates left unprocessed in the durable inbox.

Every "0 …" figure is a goal: a miss is printed with the chat, the order and what was seen,
never raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bench.measure import remove_db
from bench.report import Report
from standin import DEFAULT_TOKEN, ShownMessage, StandIn
from standin.webhook import SECRET_HEADER, WebhookRetry

SECTION = "soak"
LEASE_S = 3.0  # STEPWISE_LEASE: the poller lease (and, with run leases, theirs too)
FLOW_TIMEOUT_S = 60.0  # a customer's patience for one prompt or one answer
SETTLE_TIMEOUT_S = 90.0  # after the last flow: runs finish, owed deliveries are made
THINK_S = (0.3, 1.5)  # a customer's pause before each flow and before pressing Confirm
KILL_GAP_S = (0.5, 3.0)  # between two kills
REPRESSES = 3  # presses of a prompt offered again (after a crash) before giving up
VIEW_S = 0.1  # how often the customers' view of the chats is refreshed
WEBHOOK_SECRET = "soak-webhook-secret"
ANSWER = "Order {order_id} has been cancelled."
PROMPT = "waiting for your confirmation"
FIRST_USER = 600_001
ORDERS_PER_CHAT = 60
# Telegram retries a refused update for a day; the stand-in's default (6 attempts, then
# the update is dropped) would turn a long outage into a "lost message" that Telegram
# would not lose. Telegram's 1 s doubling start, capped so the soak stays short.
RETRY = WebhookRetry(attempts=40, first_delay=1.0, factor=2.0, max_delay=8.0)


# -- the HTTP shop -------------------------------------------------------------------------


async def serve_locally(app: web.Application) -> tuple[web.AppRunner, str]:
    """`app` on a free loopback port: its runner (to clean up) and its base URL."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


@dataclass(frozen=True)
class Post:
    order_id: str
    key: str
    sender: str  # r<slot>g<start>
    at: float


@dataclass
class Shop:
    """The shop's API as `STEPWISE_TOOLS` declares it; counts every cancel POST."""

    owners: dict[str, int] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)
    posts: list[Post] = field(default_factory=list)
    url: str = ""
    # Every answer takes this long (`--soak-shop-latency-ms`): a slow shop keeps runs in
    # flight across kills and keeps confirmed proceeds waiting behind reads in their chat.
    latency_s: float = 0.0
    _runner: web.AppRunner | None = None

    def add_order(self, order_id: str, owner: int) -> None:
        self.owners[order_id] = owner
        self.status[order_id] = "pending"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/{sender}/api/orders/{order_id}", self._order)
        app.router.add_get("/{sender}/api/policies", self._policies)
        app.router.add_post("/{sender}/api/orders/{order_id}/cancel", self._cancel)
        self._runner, self.url = await serve_locally(app)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _slow(self) -> None:
        if self.latency_s > 0:
            await asyncio.sleep(self.latency_s)  # the shop's own latency, simulated

    def _allowed(self, request: web.Request) -> web.Response | None:
        order_id = request.match_info["order_id"]
        if order_id not in self.owners:
            return web.json_response({"error": "no such order"}, status=404)
        if request.headers.get("X-Stepwise-User") != str(self.owners[order_id]):
            return web.json_response({"error": "not yours"}, status=403)
        return None

    async def _order(self, request: web.Request) -> web.Response:
        await self._slow()
        refused = self._allowed(request)
        if refused is not None:
            return refused
        order_id = request.match_info["order_id"]
        return web.json_response(
            {"order_id": order_id, "status": self.status[order_id], "eta": "2026-12-20"}
        )

    async def _policies(self, request: web.Request) -> web.Response:
        return web.json_response({"results": []})

    async def _cancel(self, request: web.Request) -> web.Response:
        """Cancels at once and answers after the latency (a kill in between leaves the
        write unclear to its sender). The key is counted, never honoured: like most shop
        APIs, this one ignores `Idempotency-Key`."""
        refused = self._allowed(request)
        if refused is not None:
            return refused
        order_id = request.match_info["order_id"]
        key = request.headers.get("Idempotency-Key", "")
        self.posts.append(Post(order_id, key, request.match_info["sender"], time.time()))
        self.status[order_id] = "cancelled"
        await self._slow()
        return web.json_response({"order_id": order_id, "status": "cancelled"})

    def tools_file(self, path: Path, sender: str) -> Path:
        base = f"{self.url}/{sender}"
        path.write_text(
            f"""
[tools.get_order_status]
url = "{base}/api/orders/{{order_id}}"
timeout_s = 5

[tools.search_policy]
url = "{base}/api/policies"

[tools.cancel_order]
method = "POST"
url = "{base}/api/orders/{{order_id}}/cancel"
risk = "high"
# As most shop APIs: the key is not honoured, so a cancel that may have reached the shop
# (a timeout, a kill mid-call and recovery) is reconciled by reading the order first.
idempotency = "ignored"
timeout_s = 5
reconcile = {{ url = "{base}/api/orders/{{order_id}}", match = {{ status = "cancelled" }} }}
""",
            encoding="utf-8",
        )
        return path


# -- the load balancer in front of the webhook replicas ------------------------------------


@dataclass
class RoundRobin:
    """One webhook URL for the stand-in; each POST goes to the next replica's port.

    A replica that is down (connection refused or cut mid-request) makes the answer 502,
    as a load balancer without health checks answers: Telegram keeps the update and
    delivers it again after its backoff.
    """

    ports: list[int]
    forwarded: int = 0
    refused: int = 0
    url: str = ""
    _next: int = 0
    _runner: web.AppRunner | None = None
    _session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=RETRY.timeout))
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._forward)
        self._runner, self.url = await serve_locally(app)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _forward(self, request: web.Request) -> web.Response:
        assert self._session is not None
        port = self.ports[self._next % len(self.ports)]
        self._next += 1
        body = await request.read()
        headers = {
            name: request.headers[name]
            for name in (SECRET_HEADER, "Content-Type")
            if name in request.headers
        }
        try:
            async with self._session.post(
                f"http://127.0.0.1:{port}{request.path_qs}", data=body, headers=headers
            ) as answer:
                data = await answer.read()
                self.forwarded += 1
                return web.Response(status=answer.status, body=data)
        except (aiohttp.ClientError, TimeoutError):
            self.refused += 1
            return web.Response(status=502, reason="Bad Gateway")


# -- the replicas --------------------------------------------------------------------------


@dataclass
class Life:
    """One start of one replica: its tag in the shop's log, when it started and died."""

    sender: str
    pid: int
    started: float
    killed: float | None = None
    exited: int | None = None  # the exit code of a replica that ended by itself


@dataclass
class Replica:
    slot: int
    argv: list[str]
    env: dict[str, str]
    workdir: Path
    shop: Shop
    proc: asyncio.subprocess.Process | None = None
    lives: list[Life] = field(default_factory=list)

    placement: str = ""

    @property
    def log(self) -> Path:
        return self.workdir / f"soak-{self.placement}-replica-{self.slot}.log"

    @property
    def up(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def start(self) -> None:
        sender = f"r{self.slot}g{len(self.lives) + 1}"
        tools = self.shop.tools_file(self.workdir / f"soak-tools-{sender}.toml", sender)
        env = {**self.env, "STEPWISE_TOOLS": str(tools)}
        with self.log.open("ab") as out:
            self.proc = await asyncio.create_subprocess_exec(
                *self.argv, env=env, cwd=self.workdir, stdout=out, stderr=subprocess.STDOUT
            )
        self.lives.append(Life(sender, self.proc.pid, time.time()))

    async def kill(self) -> None:
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGKILL)
        self.lives[-1].killed = time.time()
        await self.proc.wait()

    async def stop(self) -> None:
        if self.up:
            await self.kill()
            self.lives[-1].killed = None  # the end of the soak, not one of its kills

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _base_env(standin: StandIn, db: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))}
    env.update(
        {
            "TELEGRAM_BOT_TOKEN": DEFAULT_TOKEN,
            "TELEGRAM_API_BASE_URL": standin.base_url,
            "STEPWISE_DB": db,
            "STEPWISE_LEASE": f"{LEASE_S:g}",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


# -- the customers -------------------------------------------------------------------------


@dataclass
class Flow:
    chat: int
    order_id: str
    sent: float
    run_id: str | None = None
    pressed: float | None = None
    answered: float | None = None
    problem: str | None = None
    run_status: str | None = None  # read from the database at the end, for a failed flow
    late: bool = False  # what the customer gave up on arrived after all, by the end
    queries: list[str] = field(default_factory=list)  # the presses' callback query ids
    updates: list[int] = field(default_factory=list)  # the message's and presses' update ids
    trail: str = ""  # for a late or lost flow: how its updates travelled
    toasts: list[str] = field(default_factory=list)  # what the bot answered to them

    @property
    def loss(self) -> str | None:
        """What the customer lost: the message (no prompt), the press (the decision was
        never taken) or the answer (the run finished, the customer was never told)."""
        if self.problem is None:
            return None
        if self.pressed is None:
            return "message"
        if self.run_status in ("completed", "failed"):
            return "answer"
        return "press"


@dataclass
class Chats:
    """What every chat shows, refreshed in one pass over the stand-in's messages."""

    standin: StandIn
    users: list[int]
    shown: dict[int, list[ShownMessage]] = field(default_factory=dict)
    _seen: tuple[int, int] = (-1, -1)

    def refresh(self) -> None:
        state = self.standin.state
        seen = (len(state.calls), len(state.messages))
        if seen == self._seen:
            return
        self._seen = seen
        wanted = set(self.users)
        shown: dict[int, list[ShownMessage]] = {user: [] for user in self.users}
        for (chat_id, _), message in list(state.messages.items()):
            if chat_id in wanted and not message.deleted:
                view = state.shown(message)
                if view.from_bot:
                    shown[chat_id].append(view)
        for messages in shown.values():
            messages.sort(key=lambda m: m.message_id)
        self.shown = shown

    async def keep_fresh(self) -> None:
        while True:
            self.refresh()
            await asyncio.sleep(VIEW_S)

    def prompt(
        self, chat: int, order_id: str, pressed: set[int], run_id: str | None = None
    ) -> tuple[ShownMessage, str]:
        """The Confirm button of a prompt about `order_id` (of `run_id`, if given) on a
        message not pressed yet, if one is shown."""
        for message in reversed(self.shown.get(chat, [])):
            if message.message_id in pressed:
                continue
            for data in message.callback_data:
                if not data.startswith("sw:c:"):
                    continue
                labels = " ".join(b.text for row in message.buttons for b in row)
                about = order_id in (message.text or "") or order_id in labels
                if about and run_id in (None, data.split(":")[2]):
                    return message, data
        raise LookupError(order_id)

    def answered_or_prompted(
        self, chat: int, order_id: str, pressed: set[int], run_id: str
    ) -> tuple[ShownMessage, str] | bool:
        """True once the answer is shown; a new prompt of the run (offered again after a
        crash) to press instead; False while neither."""
        if self.answers(chat, order_id):
            return True
        try:
            return self.prompt(chat, order_id, pressed, run_id)
        except LookupError:
            return False

    def prompts(self, chat: int, order_id: str) -> int:
        """Messages that showed a prompt about `order_id`, now or before an edit."""
        return sum(
            any(PROMPT in (t or "") and order_id in (t or "") for t in (m.text, *m.history))
            for m in self.shown.get(chat, [])
        )

    def transcript(self) -> str:
        """Every chat's bot messages (text, buttons), for reading a miss afterwards."""
        lines = []
        for chat, messages in self.shown.items():
            lines.append(f"== chat {chat}")
            for m in messages:
                data = " ".join(m.callback_data)
                lines.append(f"  #{m.message_id} {(m.text or '')!r} {data}".rstrip())
        return "\n".join(lines) + "\n"

    def answers(self, chat: int, order_id: str) -> int:
        needle = ANSWER.format(order_id=order_id)
        return sum(needle in (m.text or "") for m in self.shown.get(chat, []))


async def _wait(condition: Callable[[], Any], within: float) -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            value = condition()
        except LookupError:
            value = None
        if value:
            return value
        await asyncio.sleep(VIEW_S)
    return None


async def customer(
    standin: StandIn,
    chats: Chats,
    user: int,
    orders: list[str],
    flows: list[Flow],
    stop: asyncio.Event,
    rng: random.Random,
) -> None:
    """One customer: cancel orders one after another until told to stop. A customer never
    re-sends a message; one whose press got a prompt offered again presses that one (up to
    `REPRESSES` times), as a person would."""
    pressed: set[int] = set()
    for n, order_id in enumerate(orders):
        if n and stop.is_set():  # every customer runs at least one flow
            return
        await asyncio.sleep(rng.uniform(*THINK_S))
        flow = Flow(user, order_id, time.time())
        flows.append(flow)
        standin.inject_message(user, user, f"cancel order {order_id}")
        flow.updates.append(standin.state.updates[-1].update_id)
        found = await _wait(partial(chats.prompt, user, order_id, pressed), FLOW_TIMEOUT_S)
        if found is None:  # the customer gives up on this order and goes on
            flow.problem = f"no Confirm prompt within {FLOW_TIMEOUT_S:g} s"
            continue
        message, data = found
        flow.run_id = run_id = data.split(":")[2]
        await asyncio.sleep(rng.uniform(*THINK_S))
        while True:
            pressed.add(message.message_id)
            flow.queries.append(standin.press_button(user, message.message_id, data, user))
            flow.updates.append(standin.state.updates[-1].update_id)
            flow.pressed = time.time()
            seen = await _wait(
                partial(chats.answered_or_prompted, user, order_id, pressed, run_id),
                FLOW_TIMEOUT_S,
            )
            if seen is None:
                flow.problem = f"no answer within {FLOW_TIMEOUT_S:g} s of pressing Confirm"
                break
            if seen is True:
                flow.answered = time.time()
                break
            if len(flow.queries) > REPRESSES:
                flow.problem = f"prompt offered again after {REPRESSES} presses"
                break
            message, data = seen
            await asyncio.sleep(rng.uniform(*THINK_S))


async def killer(
    replicas: list[Replica], kills: int, rng: random.Random, started: list[asyncio.Task[None]]
) -> int:
    """SIGKILL a random replica `kills` times at random moments; each is started again at
    once (in the background: the next kill may find it still starting)."""
    done = 0
    while done < kills:
        await asyncio.sleep(rng.uniform(*KILL_GAP_S))
        for replica in replicas:  # one that ended by itself is noted and started again
            proc, life = replica.proc, replica.lives[-1]
            ended = proc is not None and proc.returncode is not None
            if ended and life.killed is None and life.exited is None:
                assert proc is not None and proc.returncode is not None
                life.exited = proc.returncode
                started.append(asyncio.ensure_future(replica.start()))
        victims = [r for r in replicas if r.up]
        if not victims:
            continue
        victim = rng.choice(victims)
        await victim.kill()
        done += 1
        started.append(asyncio.ensure_future(victim.start()))
    return done


# -- reading the database at the end --------------------------------------------------------


@dataclass
class Leftovers:
    running: list[str]
    unheld: list[str]  # running or owing a delivery, with no live lease
    leases: bool  # whether the runs have lease columns at all
    unprocessed: int  # updates stored in the inbox, not processed
    statuses: dict[str, int]


def _rows(db: str, sql: str) -> list[tuple[Any, ...]]:
    if db.startswith("postgresql"):
        import psycopg

        with psycopg.connect(db, autocommit=True) as pg:
            return list(pg.execute(sql).fetchall())
    lite = sqlite3.connect(db, timeout=30)
    try:
        return lite.execute(sql).fetchall()
    finally:
        lite.close()


def _columns(db: str, table: str) -> set[str]:
    if db.startswith("postgresql"):
        rows = _rows(
            db,
            "SELECT column_name FROM information_schema.columns WHERE table_name = "
            f"'{table}' AND table_schema = current_schema()",
        )
    else:
        rows = [(r[1],) for r in _rows(db, f"PRAGMA table_info({table})")]
    return {str(r[0]) for r in rows}


def _owner_pid(owner: str) -> int | None:
    """The pid in a lease owner id (`host:pid:random`), if it has one."""
    parts = owner.split(":")
    return int(parts[-2]) if len(parts) >= 3 and parts[-2].isdigit() else None


def leftovers(db: str, live: set[int]) -> Leftovers:
    """What the soak left behind; `live`: the pids of the replicas running now. A lease
    held by any other pid (a killed replica) has no holder, however long it still runs."""
    statuses = {
        str(s): int(n) for s, n in _rows(db, "SELECT status, count(*) FROM runs GROUP BY 1")
    }
    running = [str(r[0]) for r in _rows(db, "SELECT id FROM runs WHERE status = 'running'")]
    leases = {"lease_owner", "lease_until"} <= _columns(db, "runs")
    if leases:
        now = datetime.now(UTC).isoformat(timespec="microseconds")[:26] + "Z"  # storage ts
        held = _rows(
            db,
            "SELECT id, status, lease_owner, lease_until FROM runs WHERE lease_owner IS NOT NULL",
        )
        unheld = {
            str(run)
            for run, _, owner, until in held
            if str(until or "") < now or _owner_pid(str(owner)) not in live
        }
        leased = {str(r[0]) for r in held}
        unheld |= {run for run in running if run not in leased}
    else:
        unheld = set(running)
    unprocessed = 0
    if _columns(db, "inbox"):
        unprocessed = int(_rows(db, "SELECT count(*) FROM inbox WHERE processed_at IS NULL")[0][0])
    return Leftovers(running, sorted(unheld), leases, unprocessed, statuses)


def _arrived_late(view: Chats, flow: Flow) -> bool:
    if flow.pressed is not None:
        return view.answers(flow.chat, flow.order_id) > 0
    try:
        view.prompt(flow.chat, flow.order_id, set())
    except LookupError:
        return False
    return True


def _trail(db: str, standin: StandIn, flow: Flow) -> str:
    """Each update of the flow: webhook attempts (seconds after the message was sent,
    status) and the inbox's received/processed times, to tell where it waited."""
    inbox = {
        int(u): (r, p)
        for u, r, p in _rows(db, "SELECT update_id, received_at, processed_at FROM inbox")
    }
    parts = []
    for update_id in flow.updates:
        tries = [
            f"{d.time - flow.sent:.1f}s:{d.status or d.error}"
            for d in standin.state.webhook_deliveries
            if d.update_id == update_id
        ]
        received, processed = inbox.get(update_id, (None, None))
        stored = "not stored" if received is None else f"stored {received - flow.sent:.1f}s"
        done = "" if processed is None else f", processed {processed - flow.sent:.1f}s"
        sent = f" posted [{', '.join(tries)}]" if tries else ""
        parts.append(f"update {update_id}:{sent} {stored}{done}")
    return "; ".join(parts)


def _read_run_status(db: str, flows: list[Flow]) -> None:
    ids = [f.run_id for f in flows if f.run_id is not None]
    if not ids:
        return
    quoted = ", ".join(f"'{run_id}'" for run_id in ids)  # derived ids: hex digits only
    status = dict(_rows(db, f"SELECT id, status FROM runs WHERE id IN ({quoted})"))
    for flow in flows:
        flow.run_status = str(status.get(flow.run_id, "absent"))


# -- one soak ------------------------------------------------------------------------------


@dataclass
class Outcome:
    placement: str
    replicas: int
    chats: int
    kills: int
    wall_s: float
    flows: list[Flow]
    answers: dict[tuple[int, str], int]
    prompts: dict[tuple[int, str], int]
    sends: dict[tuple[int, str], list[float]]  # when a duplicated answer was sent, each time
    posts: list[Post]
    lives: dict[str, Life]
    left: Leftovers
    refused: int  # webhook POSTs the proxy answered 502 (a replica down)
    too_many: Counter[str]  # 429s the stand-in answered (flood limits), by method
    conflicts: int  # "Conflict" lines in the replicas' logs (two pollers at once)


async def soak(
    workdir: Path,
    *,
    placement: str,
    chats: int,
    kills: int,
    seed: int = 15,
    shop_latency_s: float = 0.0,
) -> Outcome:
    rng = random.Random(seed)
    users = [FIRST_USER + n for n in range(chats)]
    shop = Shop(latency_s=shop_latency_s)
    orders: dict[int, list[str]] = {}
    for n, user in enumerate(users, start=1):
        orders[user] = [f"C{n:02d}{k:03d}" for k in range(1, ORDERS_PER_CHAT + 1)]
        for order_id in orders[user]:
            shop.add_order(order_id, user)
    schema: str | None = None
    pg_server = ""
    if placement == "webhook":
        from bench.pg_throughput import fresh_schema, in_schema, server_url

        pg_server = server_url()
        schema = fresh_schema(pg_server, "soak")
        db = in_schema(pg_server, schema)
        count = 3
    else:
        path = workdir / "soak.db"
        remove_db(path)
        db = str(path)
        count = 2
    proxy: RoundRobin | None = None
    replicas: list[Replica] = []
    restarts: list[asyncio.Task[None]] = []
    flows: list[Flow] = []
    await shop.start()
    try:
        async with StandIn(webhook_retry=RETRY) as standin:
            env = _base_env(standin, db)
            serve = [sys.executable, "-m", "stepwise", "serve", "--staff-port", "0"]
            if placement == "webhook":
                ports = [_free_port() for _ in range(count)]
                proxy = RoundRobin(ports)
                await proxy.start()
                for slot, port in enumerate(ports):
                    argv = [
                        *serve,
                        "--webhook-url", proxy.url,
                        "--webhook-secret", WEBHOOK_SECRET,
                        "--port", str(port),
                    ]  # fmt: skip
                    replicas.append(Replica(slot, argv, env, workdir, shop, placement=placement))
            else:
                replicas = [
                    Replica(slot, serve, env, workdir, shop, placement=placement)
                    for slot in range(count)
                ]
            for replica in replicas:
                replica.log.unlink(missing_ok=True)
                await replica.start()
            ready = "setWebhook" if placement == "webhook" else "getUpdates"
            await _wait(lambda: any(c.method == ready for c in standin.state.calls), FLOW_TIMEOUT_S)
            view = Chats(standin, users)
            viewer = asyncio.ensure_future(view.keep_fresh())
            stop = asyncio.Event()
            started = time.perf_counter()
            customers = [
                asyncio.ensure_future(
                    customer(standin, view, u, orders[u], flows, stop, random.Random(rng.random()))
                )
                for u in users
            ]
            done_kills = await killer(replicas, kills, rng, restarts)
            stop.set()
            await asyncio.gather(*customers)
            await asyncio.gather(*restarts)
            wall = time.perf_counter() - started
            # Settle: what was interrupted is finished and delivered by a live replica.
            live = {r.proc.pid for r in replicas if r.up and r.proc is not None}
            left = leftovers(db, live)
            deadline = time.monotonic() + SETTLE_TIMEOUT_S
            while (left.unheld or left.running or left.unprocessed) and (
                time.monotonic() < deadline
            ):
                await asyncio.sleep(0.5)
                live = {r.proc.pid for r in replicas if r.up and r.proc is not None}
            left = leftovers(db, live)
            view.refresh()
            for flow in flows:
                if flow.problem is not None and _arrived_late(view, flow):
                    flow.problem, flow.late = None, True
            _read_run_status(db, [f for f in flows if f.problem is not None])
            for flow in flows:
                if flow.problem is not None or flow.late:
                    flow.trail = _trail(db, standin, flow)
            transcript = workdir / f"soak-{placement}-chats.txt"
            transcript.write_text(view.transcript(), encoding="utf-8")
            viewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await viewer
            answers: dict[tuple[int, str], int] = {}
            prompts: dict[tuple[int, str], int] = {}
            for flow in flows:
                key = (flow.chat, flow.order_id)
                answers[key] = view.answers(flow.chat, flow.order_id)
                prompts[key] = view.prompts(flow.chat, flow.order_id)
                flow.toasts = [
                    a.text or "" for q in flow.queries for a in standin.callback_answers(q)
                ]
            too_many = Counter(c.method for c in standin.state.calls if c.status == 429)
            sends: dict[tuple[int, str], list[float]] = {}
            for key, n in answers.items():
                if n > 1:
                    needle = ANSWER.format(order_id=key[1])
                    sends[key] = [
                        c.finished or c.started
                        for c in standin.state.calls
                        if c.method == "sendMessage"
                        and c.status == 200
                        and c.chat_id == key[0]
                        and needle in str(c.params.get("text", ""))
                    ]
            for replica in replicas:
                await replica.stop()
    finally:
        for replica in replicas:
            await replica.stop()
        if proxy is not None:
            await proxy.stop()
        await shop.stop()
        if schema is not None:
            from bench.pg_throughput import drop_schema

            drop_schema(pg_server, schema)
    conflicts = sum(r.text().count("Conflict") for r in replicas)
    lives = {life.sender: life for r in replicas for life in r.lives}
    return Outcome(
        placement,
        count,
        chats,
        done_kills,
        wall,
        flows,
        answers,
        prompts,
        sends,
        list(shop.posts),
        lives,
        left,
        proxy.refused if proxy is not None else 0,
        too_many,
        conflicts,
    )


# -- the figures ---------------------------------------------------------------------------


def _post_story(posts: list[Post], lives: dict[str, Life]) -> str:
    """Who POSTed, and whether the sender died soon after (a replay after a crash)."""
    parts = []
    for post in posts:
        life = lives.get(post.sender)
        died = ""
        if life is not None and life.killed is not None and life.killed >= post.at:
            died = f" (killed {1000 * (life.killed - post.at):.0f} ms later)"
        parts.append(f"{post.sender} key={post.key}{died}")
    return "; ".join(parts)


def _sends_story(sends: list[float], lives: dict[str, Life]) -> str:
    """When each copy was sent, and the kills between the first and the second."""
    if not sends:
        return ""
    first = min(sends)
    kills = sorted(
        (life.killed, life.sender)
        for life in lives.values()
        if life.killed is not None and first <= life.killed <= max(sends)
    )
    shown = ", ".join(f"+{t - first:.2f}s" for t in sorted(sends))
    killed = ", ".join(f"{sender} +{t - first:.3f}s" for t, sender in kills[:3])
    return f" (sent {shown}; kills after the first: {killed or 'none'})"


def _replay(first: Post, later: Post, lives: dict[str, Life]) -> bool:
    """Whether `later` repeats `first` because its sender died: the same Idempotency-Key,
    and the first sender was killed after its POST and before the repeat."""
    life = lives.get(first.sender)
    if life is None or life.killed is None:
        return False
    return later.key == first.key and first.at <= life.killed <= later.at


def report_outcome(report: Report, outcome: Outcome) -> None:
    backend = "PostgreSQL" if outcome.placement == "webhook" else "SQLite"
    labels = {
        "placement": f"{outcome.replicas} x serve {outcome.placement}",
        "db": backend,
    }
    flows = outcome.flows
    presses = [f for f in flows if f.pressed is not None]
    lost = [f for f in flows if f.loss in ("message", "press")]
    unanswered = [f for f in flows if f.loss == "answer"]
    duplicates = {k: n for k, n in outcome.answers.items() if n > 1}
    by_order: dict[str, list[Post]] = {}
    for post in outcome.posts:
        by_order.setdefault(post.order_id, []).append(post)
    extra_posts = sum(len(p) - 1 for p in by_order.values())
    replays = sum(
        sum(_replay(p[0], later, outcome.lives) for later in p[1:]) for p in by_order.values()
    )
    doubled = sorted(
        order
        for order, p in by_order.items()
        if not all(_replay(p[0], later, outcome.lives) for later in p[1:])
    )
    answered_orders = {order for (_, order), n in outcome.answers.items() if n >= 1}
    answered_without_post = sorted(answered_orders - set(by_order))
    left = outcome.left
    figures: list[tuple[str, float, str]] = [
        ("kills", outcome.kills, ""),
        ("customer messages", len(flows), ""),
        ("Confirm presses", len(presses), ""),
        ("answers received", sum(outcome.answers.values()), ""),
        ("lost messages", len(lost), ""),
        ("lost answers", len(unanswered), ""),
        (f"late (> {FLOW_TIMEOUT_S:g} s)", sum(f.late for f in flows), ""),
        ("duplicate answers", sum(n - 1 for n in duplicates.values()), ""),
        ("prompts shown", sum(outcome.prompts.values()), ""),
        ("duplicate prompts", sum(max(0, n - 1) for n in outcome.prompts.values()), ""),
        ("presses repeated", sum(max(0, len(f.queries) - 1) for f in flows), ""),
        ("cancel POSTs", len(outcome.posts), ""),
        ("cancels confirmed", len(answered_orders), ""),
        ("extra cancel POSTs", extra_posts, ""),
        ("of which replays after a kill", replays, ""),
        ("orders cancelled twice", len(doubled), ""),
        ("runs without holder", len(left.unheld), ""),
        ("inbox unprocessed", left.unprocessed, ""),
        ("webhook 502s", outcome.refused, ""),
        ("429s", sum(outcome.too_many.values()), ""),
        ("wall", outcome.wall_s, "s"),
    ]
    for metric, value, unit in figures:
        report.add(SECTION, metric, value, unit, labels)
    name = f"crash soak ({outcome.replicas} x {outcome.placement}, {backend})"
    enough = outcome.kills >= 20
    report.goal(
        f"{name}: kills",
        ">= 20 SIGKILLs",
        f"{outcome.kills} kills",
        enough,
        "" if enough else "quick mode: fewer kills than the goal asks",
    )

    def story(f: Flow) -> str:
        what = f.problem or (f"arrived after {FLOW_TIMEOUT_S:g} s" if f.late else "answered")
        run = ""
        if f.run_id:
            run = f" (run {f.run_id}" + (f": {f.run_status})" if f.run_status else ")")
        if f.toasts:
            run += f"; toasts {f.toasts}"
        posts = by_order.get(f.order_id, [])
        sent = f"; POSTed by {_post_story(posts, outcome.lives)}" if posts else ""
        trail = f"; {f.trail}" if f.trail else ""
        return f"chat {f.chat} order {f.order_id}: {what}{run}{sent}{trail}"

    report.goal(
        f"{name}: lost customer messages (no prompt, or a press never acted on)",
        "0",
        f"{len(lost)} of {len(flows) + len(presses)}",
        not lost,
        "; ".join(story(f) for f in lost[:10]),
    )
    report.goal(
        f"{name}: lost answers (run finished, customer never told)",
        "0",
        f"{len(unanswered)} of {len(presses)}",
        not unanswered,
        "; ".join(story(f) for f in unanswered[:10]),
    )
    dup_note = "; ".join(
        f"chat {chat} order {order}: answer shown {n} times"
        + _sends_story(outcome.sends.get((chat, order), []), outcome.lives)
        for (chat, order), n in duplicates.items()
    )
    report.goal(
        f"{name}: duplicate answers",
        "0",
        str(sum(n - 1 for n in duplicates.values())),
        not duplicates,
        dup_note,
    )

    def posts_of(orders: list[str]) -> list[str]:
        return [f"order {o}: {_post_story(by_order[o], outcome.lives)}" for o in orders[:10]]

    post_notes = posts_of(doubled)
    replayed = sorted(o for o, p in by_order.items() if len(p) > 1 and o not in doubled)
    if answered_without_post:
        post_notes.append(f"answered 'cancelled' without a POST: {answered_without_post[:10]}")
    report.goal(
        f"{name}: double side effects (a cancel acted on twice at the backend)",
        "0 (a 2nd Idempotency-Key, or a repeat while the 1st sender lived)",
        f"{len(doubled)} orders",
        not doubled and not answered_without_post,
        "; ".join(post_notes[:10]),
    )
    report.goal(
        f"{name}: extra cancel POSTs (any repeat, replays after a kill too)",
        "0 extra POSTs, one POST per confirmed cancel",
        f"{len(outcome.posts)} POSTs for {len(answered_orders)} confirmed cancels, "
        f"{extra_posts} extra ({replays} replays after a kill)",
        extra_posts == 0 and not answered_without_post,
        (
            "the same key sent again after its sender died between the POST and recording"
            " its result (at-least-once by design, one effect at a backend honouring the"
            " key): " + "; ".join(posts_of(replayed))
        )
        if replayed
        else "",
    )
    held_note = (
        ("" if left.leases else "no run leases in this build: every running run counts; ")
        + (f"runs: {left.unheld[:10]}; " if left.unheld else "")
        + f"statuses {left.statuses}"
    )
    report.goal(
        f"{name}: runs without a lease holder after the soak",
        "0",
        str(len(left.unheld)),
        not left.unheld,
        held_note,
    )
    late = [f for f in flows if f.late]
    if late:
        report.note(
            f"{name}: what a customer gave up on arrived later: "
            + "; ".join(story(f) for f in late[:10])
        )
    repeated = [f for f in flows if len(f.queries) > 1]
    if repeated:
        report.note(
            f"{name}: a prompt offered again after a crash was pressed again: "
            + "; ".join(story(f) for f in repeated[:10])
        )
    exits = [life for life in outcome.lives.values() if life.exited is not None]
    if exits:
        report.note(
            f"{name}: {len(exits)} replica start(s) ended by themselves (not killed): "
            + ", ".join(f"{life.sender} exit {life.exited}" for life in exits[:10])
            + f"; see soak-{outcome.placement}-replica-<slot>.log"
        )
    if outcome.conflicts:
        report.note(f"{name}: {outcome.conflicts} 'Conflict' lines in the replicas' logs")
    if outcome.too_many:
        report.note(f"{name}: the stand-in answered 429 to {dict(outcome.too_many)}")


async def run_soak(
    report: Report, workdir: Path, chats: int, kills: int, shop_latency_s: float = 0.0
) -> None:
    from bench.pg_throughput import server_url

    report.note(
        f"soak: the shop answers every call after {shop_latency_s:g} s and ignores"
        " Idempotency-Key (a repeated cancel POST is counted, never deduplicated)"
    )
    placements = ["webhook", "polling"]
    try:
        import psycopg

        psycopg.connect(server_url(), connect_timeout=3).close()
    except Exception as exc:  # any failure to connect: SQLite only
        report.note(f"soak, webhook on PostgreSQL: left out (no server: {exc})")
        placements = ["polling"]
    for placement in placements:
        outcome = await soak(
            workdir,
            placement=placement,
            chats=chats,
            kills=kills,
            shop_latency_s=shop_latency_s,
        )
        report_outcome(report, outcome)
