"""Section 5: the Telegram path, end to end, through the local Bot API stand-in.

The real bot (`bot_application` + `open_runtime`, the demo shop in SQLite, the sliding
window rate limiter) long-polls an in-process `StandIn` with Telegram's flood limits (30
messages/s per bot). Each customer writes "cancel order Cxxxxx", waits for the Confirm
button, presses it as soon as it shows and waits for "has been cancelled".

Two arrival patterns: `burst` (every customer writes at the same instant, as the issue
asks) and `paced` (customers arrive at a steady rate the 30 msg/s budget can absorb), so
the first-visible-message latency can be read both at saturation and below it. The goal
"first visible message p95 < 150 ms when not rate-limited" is judged on `paced`; the
burst's figure is printed as information (Telegram's 30 msg/s sets its floor). A third,
`one chat`, has one customer ask several things at once, so every message goes to one
chat: the bot's per-chat pacing must keep it under Telegram's per-chat limit (a burst of
3, then about one a second) with zero 429s.

The customers are driven by one watcher that reads the stand-in's append-only call log
incrementally; per-customer `wait_for` predicates would rescan every chat on every change
and cost more CPU than the bot itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import sqlite3
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from bench.measure import LatencySummary, percentile, remove_db
from bench.report import Report
from standin import DEFAULT_TOKEN, CallRecord, StandIn

SECTION = "bot"
TELEGRAM_LIMIT = 30.0  # messages per second per bot
MESSAGE_METHODS = frozenset({"sendmessage", "editmessagetext", "editmessagereplymarkup"})
FIRST_CUSTOMER = 300_001
SEED_SOURCE = Path(__file__).resolve().parent.parent / "storage" / "shop" / "seed.json"


def write_seed(path: Path, customers: list[int]) -> None:
    """One pending order per customer, plus the demo shop's policies."""
    policies = json.loads(SEED_SOURCE.read_text(encoding="utf-8"))["policies"]
    orders = [
        {
            "id": order_of(uid),
            "owner_user_id": uid,
            "status": "pending",
            "eta": "2026-12-10",
            "items": ["Mechanical keyboard"],
        }
        for uid in customers
    ]
    path.write_text(json.dumps({"orders": orders, "policies": policies}), encoding="utf-8")


def order_of(uid: int) -> str:
    return f"C{uid}"


@dataclass
class Customer:
    uid: int
    injected: float = 0.0
    first_seen: float | None = None
    pressed: float | None = None
    done: float | None = None


@dataclass
class Watcher:
    """Plays every customer's side from the stand-in's call log."""

    standin: StandIn
    customers: dict[int, Customer]
    cursor: int = 0
    in_flight: list[CallRecord] = field(default_factory=list)

    def news(self) -> bool:
        return len(self.standin.state.calls) > self.cursor or any(
            r.status is not None for r in self.in_flight
        )

    def step(self) -> None:
        calls = self.standin.state.calls
        fresh, self.cursor = calls[self.cursor :], len(calls)
        pending = self.in_flight + fresh
        self.in_flight = [r for r in pending if r.status is None]
        for record in pending:
            if record.status is not None:
                self._completed(record)

    def _completed(self, record: CallRecord) -> None:
        customer = self.customers.get(record.chat_id or 0)
        if customer is None or record.status != 200 or record.finished is None:
            return
        method = record.method.lower()
        if method not in MESSAGE_METHODS:
            return
        if method == "sendmessage" and customer.first_seen is None:
            customer.first_seen = record.finished
        text = str(record.params.get("text", ""))
        if "callback_data" in str(record.params.get("reply_markup", "")) and not customer.pressed:
            self._press_confirm(customer)
        if "has been cancelled" in text and customer.done is None:
            customer.done = record.finished

    def _press_confirm(self, customer: Customer) -> None:
        state = self.standin.state
        chat = state.chat(customer.uid)
        for message_id in range(chat.next_message_id - 1, 0, -1):
            message = state.find_message(customer.uid, message_id)
            if message is None or not message.from_bot:
                continue
            buttons = state.shown(message).buttons
            if buttons and buttons[0][0].callback_data:
                self.standin.press_button(
                    customer.uid, message_id, buttons[0][0].callback_data, customer.uid
                )
                customer.pressed = self.standin.clock()
                return

    @property
    def finished(self) -> bool:
        return all(c.done is not None for c in self.customers.values())

    async def run(self, deadline: float) -> None:
        while not self.finished:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            await self.standin.changes.wait_until(self.news, min(left, 1.0))
            self.step()


@contextlib.asynccontextmanager
async def running_bot(standin: StandIn, db: Path, seed: Path) -> AsyncIterator[None]:
    """The production bot (`bot_application`, `start_application`: the inbox and the poller
    lease) long-polling `standin` until the block ends.

    The composition root is imported here, as the bench did before, so other sections never
    load PTB."""
    from bot.application import start_application, stop_application
    from stepwise.runtime import open_runtime
    from stepwise.serve import bot_application, open_receiving
    from stepwise.settings import Settings

    settings = Settings.model_validate(
        {
            "TELEGRAM_BOT_TOKEN": DEFAULT_TOKEN,
            "TELEGRAM_API_BASE_URL": standin.base_url,
            "STEPWISE_DB": str(db),
            "STEPWISE_SHOP_SEED": str(seed),
        }
    )
    runtime = await open_runtime(settings)
    app = bot_application(runtime)
    try:
        await app.initialize()
        # As `stepwise serve` receives: through the durable inbox, holding the poller lease.
        await start_application(app, await open_receiving(runtime), poll_timeout_s=1)
        await standin.wait_for(lambda: standin.active_polls > 0, timeout=10)
        yield
    finally:
        await stop_application(app)
        await app.shutdown()
        await runtime.close()


async def _inject(standin: StandIn, customers: list[Customer], rate: float | None) -> None:
    """Every customer writes once: all at the same instant, or `rate` per second."""
    started = time.monotonic()
    for n, customer in enumerate(customers):
        if rate is not None:
            delay = started + n / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        customer.injected = standin.clock()
        standin.inject_message(customer.uid, customer.uid, f"cancel order {order_of(customer.uid)}")


@dataclass(frozen=True)
class Outcome:
    customers: list[Customer]
    calls: list[CallRecord]
    served_429: int
    runs: dict[str, int]
    cancellations: int
    distinct_orders: int
    wall_s: float


async def play(workdir: Path, count: int, rate: float | None, timeout_s: float) -> Outcome:
    """Start stand-in and bot, play `count` customers, stop everything, read the database."""

    tag = "burst" if rate is None else "paced"
    db = workdir / f"bot-{tag}.db"
    seed = workdir / f"seed-{tag}.json"
    uids = list(range(FIRST_CUSTOMER, FIRST_CUSTOMER + count))
    remove_db(db)
    write_seed(seed, uids)
    customers = {uid: Customer(uid) for uid in uids}

    async with StandIn() as standin, running_bot(standin, db, seed):
        first_call = len(standin.state.calls)
        served_before = standin.served_429
        watcher = Watcher(standin, customers, cursor=first_call)
        started = time.monotonic()
        deadline = started + timeout_s
        watching = asyncio.create_task(watcher.run(deadline))
        await _inject(standin, list(customers.values()), rate)
        await watching
        wall = time.monotonic() - started
        # Let trailing calls (the last callback answers) finish before counting.
        await asyncio.sleep(0.2)
        calls = standin.state.calls[first_call:]
        served = standin.served_429 - served_before

    with sqlite3.connect(db) as conn:
        runs = {
            str(s): int(n)
            for s, n in conn.execute("SELECT status, count(*) FROM runs GROUP BY status")
        }
        cancellations = int(conn.execute("SELECT count(*) FROM shop_cancellations").fetchone()[0])
        distinct = int(
            conn.execute("SELECT count(DISTINCT order_id) FROM shop_cancellations").fetchone()[0]
        )
    return Outcome(list(customers.values()), calls, served, runs, cancellations, distinct, wall)


def _report(report: Report, outcome: Outcome, tag: str, rate: float | None) -> None:
    n = len(outcome.customers)
    labels = {"scenario": tag, "customers": str(n)}
    if rate is not None:
        labels["arrivals/s"] = f"{rate:g}"
    api = [c for c in outcome.calls if c.method.lower() != "getupdates"]
    by_method: dict[str, int] = {}
    for call in api:
        by_method[call.method] = by_method.get(call.method, 0) + 1
    sent = [
        c
        for c in outcome.calls
        if c.method.lower() in MESSAGE_METHODS and c.status == 200 and c.finished is not None
    ]
    busy = (max(c.finished or 0.0 for c in sent) - min(c.started for c in sent)) if sent else 0.0
    rate_achieved = len(sent) / busy if busy > 0 else 0.0
    first = [c.first_seen - c.injected for c in outcome.customers if c.first_seen is not None]
    done = [c.done - c.injected for c in outcome.customers if c.done is not None]
    after_press = [
        c.done - c.pressed for c in outcome.customers if c.done is not None and c.pressed
    ]
    lat_first = LatencySummary.of(first)
    completed = outcome.runs.get("completed", 0)
    total_runs = sum(outcome.runs.values())
    report.add(SECTION, "API calls/run", len(api) / n, "", labels, by_method=by_method)
    report.add(SECTION, "message calls/run", len(sent) / n, "", labels)
    report.add(SECTION, "message rate", rate_achieved, "msg/s", labels, busy_s=round(busy, 3))
    report.add(SECTION, "429s", outcome.served_429, "", labels)
    report.add(SECTION, "first msg p50", lat_first.p50_ms, "ms", labels)
    report.add(SECTION, "first msg p95", lat_first.p95_ms, "ms", labels)
    report.add(SECTION, "answer p95", percentile(done, 95) * 1000, "ms", labels)
    report.add(SECTION, "press→answer p95", percentile(after_press, 95) * 1000, "ms", labels)
    report.add(SECTION, "wall", outcome.wall_s, "s", labels)
    report.add(SECTION, "runs completed", completed, "", labels, runs_by_status=outcome.runs)
    report.add(SECTION, "cancellations", outcome.cancellations, "", labels)
    intact = (
        completed == n
        and total_runs == n
        and outcome.cancellations == n
        and outcome.distinct_orders == n
        and len(done) == n
    )
    if rate is None:
        _burst_goals(report, outcome, n, tag, rate_achieved, intact, lat_first.p95_ms)
    else:
        _paced_goals(report, outcome, n, tag, rate, intact, lat_first.p95_ms)


def _lost_or_duplicated(report: Report, outcome: Outcome, n: int, tag: str, intact: bool) -> None:
    completed = outcome.runs.get("completed", 0)
    report.goal(
        f"bot path {tag}: no lost or duplicated runs",
        f"{n} runs completed, {n} cancellations",
        f"{completed}/{sum(outcome.runs.values())} completed, {outcome.cancellations}"
        f" cancellations ({outcome.distinct_orders} orders)",
        intact,
    )


def _burst_goals(
    report: Report,
    outcome: Outcome,
    n: int,
    tag: str,
    rate_achieved: float,
    intact: bool,
    first_p95_ms: float,
) -> None:
    target_rate = 0.9 * TELEGRAM_LIMIT
    report.goal(
        f"bot path {tag}: message rate",
        f">= {target_rate:.0f} msg/s (90% of 30)",
        f"{rate_achieved:.1f} msg/s",
        rate_achieved >= target_rate,
    )
    report.goal(f"bot path {tag}: no 429", "0", str(outcome.served_429), outcome.served_429 == 0)
    _lost_or_duplicated(report, outcome, n, tag, intact)
    # Telegram admits 30 messages in any second: the k-th first message cannot show before
    # second (k - 1) // 30, however the bot orders its queue. Not a goal: the issue asks for
    # 150 ms "when not rate-limited", which the paced scenario measures.
    floor = (math.ceil(0.95 * n) - 1) // int(TELEGRAM_LIMIT) * 1000
    limit = (
        f"; Telegram's 30 msg/s rate-limits it: even a bot that sent every first message"
        f" before anything else could not do better than ~{floor:.0f} ms at p95"
        if floor > 0
        else ""
    )
    report.note(
        f"information, not a goal: bot path {tag} first visible message p95 ="
        f" {first_p95_ms:.0f} ms with {n} customers arriving at once{limit}"
    )


def _paced_goals(
    report: Report,
    outcome: Outcome,
    n: int,
    tag: str,
    rate: float,
    intact: bool,
    first_p95_ms: float,
) -> None:
    limited = outcome.served_429 > 0
    report.goal(
        f"bot path {tag}: first visible message p95 (not rate-limited)",
        "< 150 ms",
        f"{first_p95_ms:.0f} ms ({n} customers at {rate:g}/s, {outcome.served_429} x 429)",
        first_p95_ms < 150 and not limited,
        note=(
            "Telegram answered 429: this load was rate-limited, so the goal's premise failed"
            if limited
            else ""
        ),
    )
    _lost_or_duplicated(report, outcome, n, tag, intact)


# -- one chat, a fast run: the bot's per-chat pacing against Telegram's per-chat limit --

ONE_CHAT_QUESTIONS = 4  # three messages each (plan, step, answer): 12 in one chat


@dataclass(frozen=True)
class ChatPacing:
    messages: list[CallRecord]  # the chat's sends and edits, in order
    refused: int  # 429s the stand-in served to this chat
    runs_completed: int


async def play_one_chat(workdir: Path, questions: int, timeout_s: float) -> ChatPacing:
    """One customer asks `questions` things at once: every message of every run goes to
    one chat, against the stand-in's realistic flood limits (its `FloodLimits` defaults:
    a burst of 3, then about one per second per chat)."""

    db, seed = workdir / "bot-one-chat.db", workdir / "seed-one-chat.json"
    remove_db(db)
    write_seed(seed, [FIRST_CUSTOMER])
    uid = FIRST_CUSTOMER
    async with StandIn() as standin, running_bot(standin, db, seed):
        for _ in range(questions):
            standin.inject_message(uid, uid, f"where is order {order_of(uid)}")

        def answered() -> bool:
            done = [c for c in standin.calls("sendMessage", uid) if c.ok]
            return len(done) >= 3 * questions

        await standin.wait_for(answered, timeout=timeout_s)
        messages = [
            c for c in standin.calls(chat_id=uid) if c.method.lower() in MESSAGE_METHODS and c.ok
        ]
        refused = standin.flood_refusals(uid)
    with sqlite3.connect(db) as conn:
        completed = int(
            conn.execute("SELECT count(*) FROM runs WHERE status = 'completed'").fetchone()[0]
        )
    return ChatPacing(messages, refused, completed)


def _report_one_chat(report: Report, pacing: ChatPacing, questions: int) -> None:
    labels = {"scenario": "one chat", "questions": str(questions)}
    times = [c.started for c in pacing.messages]
    n = len(times)
    span = times[-1] - times[0] if n > 1 else 0.0
    burst = 3
    after_burst = (n - burst) / (times[-1] - times[burst - 1]) if n > burst else 0.0
    report.add(SECTION, "one chat: messages", n, "", labels)
    report.add(SECTION, "one chat: span", span, "s", labels)
    report.add(SECTION, "one chat: rate after the burst", after_burst, "msg/s", labels)
    report.add(SECTION, "one chat: 429s", pacing.refused, "", labels)
    report.goal(
        "bot path one chat: per-chat pacing",
        "0 x 429, <= 1 msg/s after a burst of 3",
        f"{pacing.refused} x 429, {n} messages in {span:.1f} s"
        f" ({after_burst:.2f} msg/s after the burst),"
        f" {pacing.runs_completed}/{questions} runs completed",
        pacing.refused == 0 and after_burst <= 1.0 and pacing.runs_completed == questions,
    )


async def run_bot(
    report: Report, workdir: Path, customers: int, paced_customers: int, rate: float
) -> None:
    logging.getLogger("httpx").setLevel(logging.WARNING)
    timeout = 60 + customers * 0.5
    outcome = await play(workdir, customers, None, timeout)
    _report(report, outcome, "burst", None)
    if paced_customers > 0:
        outcome = await play(workdir, paced_customers, rate, timeout + paced_customers / rate)
        _report(report, outcome, "paced", rate)
    pacing = await play_one_chat(workdir, ONE_CHAT_QUESTIONS, 60)
    _report_one_chat(report, pacing, ONE_CHAT_QUESTIONS)
