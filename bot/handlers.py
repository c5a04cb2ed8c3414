"""The bot's handlers: what customers and staff can say to it, and what it answers.

Handlers return at once; each request runs as a background task, ordered per chat (a
chat's runs never overtake each other) and never blocking other chats.

The bot's side of the conversation, one class per role (issue 24): `CustomerMessages`
(text, edits, other messages, /start and /help), `Decisions` (button presses: Confirm /
Cancel, clarifying options), `StaffCommands` (/runs and its paging, /run, /stats, /status)
and `HandoffHooks` (/human, "Talk to a person", the staff group, /close and /reopen, the
answer hook, expiring staff approvals). They share one `BotState`; `StepwiseBot` wires them
together. Wiring to Telegram is in `bot.application`, texts in `bot.texts`, staff formatting
in `bot.staff`, the handoff's own work in `bot.handoff`.
"""

from __future__ import annotations

import asyncio
import html
import logging
import secrets
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from telegram import (
    Bot,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    MaybeInaccessibleMessage,
    Message,
    Update,
)
from telegram.constants import ChatType, MessageEntityType, ParseMode
from telegram.error import BadRequest, TelegramError
from telegram.ext import ContextTypes

from agent_core.agent import MAX_REQUEST_CHARS, Agent
from agent_core.execution.approval import (
    StaffCheck,
    Verdict,
    check_staff_press,
    judge_press,
    needed_approval,
)
from agent_core.execution.tools import ToolContext, ToolFailure
from agent_core.http import CustomerDirectory
from agent_core.http.customer import LinkOutcome
from agent_core.models import (
    ClaimResult,
    EventKind,
    Language,
    PromptRef,
    Run,
    RunStatus,
    StepStatus,
    utcnow,
)
from bot.alerts import AlertGate, StaffAlerts
from bot.callbacks import (
    ChoiceData,
    CloseHandoffData,
    DecisionData,
    PageData,
    PersonData,
    page_data,
    parse_callback,
)
from bot.handoff import (
    CUSTOMER,
    REASON_LABELS,
    Customer,
    HandoffDesk,
    Opened,
    handoff_is_private,
    is_handoff_request,
    offers_person,
    person_button,
    private_handoff_button,
    reason_buttons,
    start_handoff_run,
    unclear_change,
)
from bot.link import link_token, start_payload, was_redacted
from bot.outcomes import staff_outcome_text
from bot.progress import ANSWER_NOTE, TOPIC, TelegramProgress, decision_text
from bot.shop_alerts import ShopAlerts
from bot.slash import Slash, read_slash
from bot.staff import format_handoff_stats, format_runs_page, format_stats, format_timeline
from bot.texts import language_of, say
from bot.textsplit import split_message
from storage.db import StorageUnavailable
from storage.handoffs import Trigger
from storage.store import RunStore

log = logging.getLogger(__name__)

RUNS_PAGE_SIZE = 8

# What the customer is told after `/start <token>` (`bot.link`), by what the shop said.
LINK_TEXTS = {
    LinkOutcome.LINKED: "linked",
    LinkOutcome.REFUSED: "link_refused",
    LinkOutcome.UNAVAILABLE: "link_unavailable",
}

# What a staff press that is not theirs to make here is told (`check_staff_press`).
STAFF_CHECK_TOASTS = {
    StaffCheck.NOT_FOUND: "toast_invalid",
    StaffCheck.NOT_STAFFS: "toast_not_yours",
    StaffCheck.HANDLED: "toast_handled",
    StaffCheck.STALE: "toast_invalid",  # pressed on another message: this button is not valid
    StaffCheck.OWN_ORDER: "toast_own_order",
}


class ChatQueues:
    """One lock per chat with waiters: a chat's work runs in arrival order."""

    def __init__(self) -> None:
        self._locks: dict[int, asyncio.Lock] = {}
        self._users: dict[int, int] = {}

    async def run(self, chat_id: int, work: Coroutine[Any, Any, object]) -> None:
        lock = self._locks.setdefault(chat_id, asyncio.Lock())
        self._users[chat_id] = self._users.get(chat_id, 0) + 1
        try:
            async with lock:
                await work
        finally:
            self._users[chat_id] -= 1
            if self._users[chat_id] == 0:  # forget idle chats: memory stays flat
                del self._users[chat_id]
                del self._locks[chat_id]


class BotState:
    """What every role of the conversation shares: the agent, the store, the progress
    messages, the staff ids, the per-chat order, the alert gate and the handoff desk."""

    def __init__(
        self,
        agent: Agent,
        store: RunStore,
        progress: TelegramProgress,
        *,
        staff_ids: frozenset[int] = frozenset(),
        handoff: HandoffDesk | None = None,
        linker: CustomerDirectory | None = None,
    ) -> None:
        self.agent = agent
        self.store = store
        self.progress = progress
        self.staff_ids = staff_ids
        self.chats = ChatQueues()
        # `/status` in the staff group: the readiness report in words (`bot.health`), set
        # by whoever runs the health checks (`stepwise serve`); None: not available here.
        self.readiness: Callable[[], Awaitable[str]] | None = None
        # One staff alert per backend incident and 10 minutes, per process (`bot.alerts`).
        self.alerts = AlertGate()
        # The bot's own incidents (backlog, leases, 429s), through the same gate; fed by
        # whoever runs the lease keeper, the poller, the limiter and the health checks.
        self.staff_alerts = StaffAlerts(handoff, self.alerts)
        # The shop's system broken or out of reach: one alert per episode, and a recovery
        # message when a call of the tool works again (`bot.shop_alerts`).
        self.shop_alerts = ShopAlerts(handoff, self.alerts)
        # Human handoff (issue 14); without a desk (no bot to talk to staff) none opens.
        self.handoff = handoff
        # The shop's `[customer]` lookup with a `claim`: `/start <token>` links (`bot.link`);
        # None: `/start <token>` is the plain /start.
        self.linker = linker if linker is not None and linker.can_claim else None


class _Role:
    """The shared state and the reply helpers every role uses; no handler of its own."""

    def __init__(self, state: BotState) -> None:
        self.state = state

    @property
    def agent(self) -> Agent:
        return self.state.agent

    @property
    def store(self) -> RunStore:
        return self.state.store

    @property
    def progress(self) -> TelegramProgress:
        return self.state.progress

    @property
    def staff_ids(self) -> frozenset[int]:
        return self.state.staff_ids

    @property
    def chats(self) -> ChatQueues:
        return self.state.chats

    @property
    def alerts(self) -> AlertGate:
        return self.state.alerts

    @property
    def staff_alerts(self) -> StaffAlerts:
        return self.state.staff_alerts

    @property
    def handoff(self) -> HandoffDesk | None:
        return self.state.handoff

    @property
    def readiness(self) -> Callable[[], Awaitable[str]] | None:
        return self.state.readiness

    @property
    def _staffed(self) -> bool:
        """A staff group takes handoffs (so /human and "Talk to a person" lead somewhere)."""
        return self.handoff is not None and self.handoff.staff_chat_id is not None

    def _staff_refusal(self, update: Update) -> str | None:
        """None when staff views may be shown here, else the key of the refusal.

        Who asks is not enough: staff views list every customer's ids and requests, so
        they are shown only in a private chat with a staff member, never in a group the
        staff member happens to be in.
        """
        user, chat = update.effective_user, update.effective_chat
        if user is None or user.id not in self.staff_ids:
            return "not_authorised"
        if chat is None or chat.type != ChatType.PRIVATE or chat.id != user.id:
            return "staff_private_only"
        return None

    async def _staff_only(self, update: Update) -> bool:
        refusal = self._staff_refusal(update)
        if refusal is None:
            return True
        await self._reply(update, html.escape(say(refusal, self._language(update))))
        return False

    def _language(self, update: Update) -> Language:
        message, user = update.effective_message, update.effective_user
        text = message.text if message is not None else None
        if text and text.startswith("/"):
            text = None  # "/start" says nothing about the language; the user's setting does
        return language_of(text, user.language_code if user else None)

    async def _reply(
        self, update: Update, text: str, markup: InlineKeyboardMarkup | None = None
    ) -> None:
        message = update.effective_message
        if message is not None:
            await message.reply_text(text, parse_mode=ParseMode.HTML, reply_markup=markup)

    @staticmethod
    async def _reply_with(message: Message, text: str, markup: InlineKeyboardMarkup | None) -> None:
        try:
            await message.reply_text(text, reply_markup=markup)
        except TelegramError as exc:
            log.warning("could not reply: %s", exc)

    @staticmethod
    async def _reply_quietly(message: Message, text: str, *, quote: bool | None = None) -> None:
        try:
            await message.reply_text(text, do_quote=quote)
        except TelegramError as exc:
            log.warning("could not reply: %s", exc)

    @staticmethod
    async def _answer_quietly(query: Any, text: str | None) -> None:
        try:
            await query.answer(text)
        except TelegramError as exc:  # a query answered too late is harmless
            log.info("callback answer failed: %s", exc)


class HandoffHooks(_Role):
    """A person takes over (issue 14): /human, "Talk to a person", the staff group, /close
    and /reopen, the answer hook that opens a handoff, and staff approvals that expire."""

    async def relayed(self, message: Message, *, edited: bool = False, update_id: int = 0) -> bool:
        if self.handoff is None:
            return False
        try:
            return await self.handoff.from_customer(message, edited=edited, update_id=update_id)
        except StorageUnavailable:
            log.exception("storage unavailable while relaying to staff")
            await self._reply_quietly(message, say("busy", language_of(message.text, None)))
            return True

    async def answer_hook(self, run: Run) -> tuple[str | None, InlineKeyboardMarkup | None]:
        """Before a run's answer is sent: a handoff request opens the handoff and its reply
        replaces the agent's; an answer that stopped or degraded offers a person."""
        assert self.handoff is not None
        if is_handoff_request(run):
            customer = CUSTOMER.get()
            if customer is None or customer.chat_id != run.chat_id:
                # Telegram's private chats have the user's id; a group's never does.
                private = run.chat_id == run.user_id
                name = f"user {run.user_id}"
                customer = Customer(run.chat_id, run.user_id, name, run.language, private=private)
            if not handoff_is_private(customer):
                return self._go_private(run.id, run.language)
            opened = await self.handoff.open(customer, Trigger.INTENT, run)
            return opened_text(opened, run.language), None
        # One alert per unknown-outcome write, in the customer's topic only (`bot.alerts`).
        if unclear_change(run) is not None and self.alerts.allow(("unclear change", run.id)):
            await self.handoff.alert_unclear_change(run)
        await self.state.shop_alerts.after(run)
        previous = None
        if run.status is RunStatus.NEEDS_CLARIFICATION and self.handoff.staff_chat_id is not None:
            page = await self.store.history.list_runs(chat_id=run.chat_id, limit=2)
            earlier = [item for item in page.items if item.id != run.id]
            previous = earlier[0].status if earlier else None
        # Without a staff group nobody could take it: no button that leads nowhere.
        if self.handoff.staff_chat_id is not None and offers_person(run, previous):
            return None, person_button(run.id, run.language)
        return None, None

    async def handoff_start(
        self,
        application: Any | None = None,
        *,
        every_s: int = 30,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """On start: check the staff group, re-send relays a crash interrupted; then, while
        `application` runs, close staff approvals nobody answered in time every `every_s`
        (checking each second whether the application stops, which waits for this task)."""
        if self.handoff is None:
            return
        await self.handoff.on_start()
        if self.handoff.staff_chat_id is None:
            return  # no staff approvals without a staff chat
        while True:
            try:
                await self.sweep_staff_expiries()
            except Exception:
                log.exception("staff approval: expiry sweep failed")
            for _ in range(every_s):
                if application is None or not application.running:
                    return
                await sleep(1)

    async def sweep_staff_expiries(self, *, page: int = 100) -> int:
        """Staff approvals nobody answered before they expired: each is closed as expired
        (nothing done), its prompt in the topic says so, and the customer is told. Returns
        how many. Pages through EVERY expired one, oldest first, however many newer ones
        wait (issue 20 #6). Expired pauses only, by the agent's clock: the claim can never
        win one (it is past its time), so this decides nothing."""
        desk = self.handoff
        if desk is None or desk.staff_chat_id is None:
            return 0
        cutoff = self.agent.now() - self.agent.approval_ttl
        closed, after = 0, None
        while True:
            ids, after = await self.store.history.expired_staff_pauses(
                cutoff, after=after, limit=page
            )
            for run_id in ids:
                closed += await self._close_expired(desk, run_id, cutoff)
            if after is None:
                return closed

    async def _close_expired(self, desk: HandoffDesk, run_id: str, cutoff: datetime) -> int:
        """Close one staff approval found expired (1), or leave it (0: it moved on)."""
        run = await self.store.load_run(run_id)
        pause = run.pause if run is not None else None
        if run is None or pause is None or pause.approver != "staff":
            return 0
        if pause.paused_at >= cutoff or pause.nonce is None:
            return 0
        outcome = await self.agent.claim(
            run.id, user_id=0, approved=False, nonce=pause.nonce, staff=True
        )
        if outcome.result is not ClaimResult.EXPIRED or outcome.run is None:
            return 0
        goal = html.escape(run.step(pause.step_id).goal)
        if pause.prompt is not None:
            where = Where(pause.prompt.chat_id, pause.prompt.message_id)
            note = f"⌛ {goal} — nobody decided in time; nothing was done, the customer was told"
            await _edit_quietly(desk.bot, where, note)
        waiting = self.progress.waiting_message(run.id)  # the customer's step message
        if waiting is not None and waiting[0] == pause.step_id:
            shown = Where(run.chat_id, waiting[1], waiting[2])
            await _edit_quietly(
                desk.bot, shown, decision_text(outcome.run, pause.step_id, "expired")
            )
        await _send_quietly(desk.bot, Where(run.chat_id, 0), outcome.run.answer or "")
        return 1

    async def human(
        self,
        update: Update,
        context: ContextTypes.DEFAULT_TYPE,
        *,
        run_id: str | None = None,
    ) -> None:
        """/human: hand the conversation to a person, with the chat's last run for context
        (`run_id`: the run a group's "continue privately" link named, if it is theirs).
        In a group: the way to a private handoff instead (`handoff_is_private`)."""
        message, user = update.effective_message, update.effective_user
        if message is None or user is None or self.handoff is None:
            return
        private = message.chat.type == ChatType.PRIVATE
        language = self._language(update)
        customer = Customer(message.chat_id, user.id, user.full_name, language, private=private)
        desk = self.handoff

        async def work() -> None:
            run = await self.store.load_run(run_id) if run_id else None
            if run is None or run.user_id != customer.user_id:  # only their own run
                page = await self.store.history.list_runs(
                    chat_id=customer.chat_id, user_id=customer.user_id, limit=1
                )
                run = await self.store.load_run(page.items[0].id) if page.items else None
            if not handoff_is_private(customer):
                text, markup = self._go_private(run.id if run else None, customer.language)
                await self._reply_with(message, text, markup)
                return
            opened = await desk.open(customer, Trigger.COMMAND, run)
            await self._reply_quietly(message, opened_text(opened, customer.language))

        context.application.create_task(self.chats.run(message.chat_id, work()), update=update)

    async def person(
        self, update: Update, context: ContextTypes.DEFAULT_TYPE, data: PersonData
    ) -> None:
        """ "Talk to a person" under an answer: only the run's own customer may press it."""
        query, user = update.callback_query, update.effective_user
        assert query is not None and user is not None
        language = self._language(update)
        run = await self.store.load_run(data.run_id)
        pressed = query.message
        if self.handoff is None or run is None or pressed is None:
            await self._answer_quietly(query, say("toast_invalid", language))
            return
        if run.user_id != user.id or run.chat_id != pressed.chat.id:
            await self._answer_quietly(query, say("toast_not_yours", language))
            return
        await self._answer_quietly(query, say("toast_person", run.language))
        private = pressed.chat.type == ChatType.PRIVATE
        customer = Customer(run.chat_id, user.id, user.full_name, run.language, private=private)
        desk, bot = self.handoff, context.bot

        async def work() -> None:
            if not handoff_is_private(customer):
                text, markup = self._go_private(run.id, run.language)
                try:
                    await bot.send_message(
                        run.chat_id,
                        text,
                        message_thread_id=Where.of(pressed).thread_id,
                        reply_markup=markup,
                    )
                except TelegramError as exc:
                    log.warning("could not send: %s", exc)
                return
            opened = await desk.open(customer, Trigger.BUTTON, run)
            try:
                await bot.edit_message_reply_markup(pressed.chat.id, pressed.message_id)
            except TelegramError as exc:
                log.info("person button not removed: %s", exc)
            await _send_quietly(bot, Where.of(pressed), opened_text(opened, run.language))

        context.application.create_task(self.chats.run(run.chat_id, work()), update=update)

    def _go_private(
        self, run_id: str | None, language: Language
    ) -> tuple[str, InlineKeyboardMarkup | None]:
        """What a customer who asked for a person in a group is told: a handoff is private
        (`handoff_is_private`), and the button opens their private chat, handed over."""
        assert self.handoff is not None
        username = self.handoff.bot.username
        markup = private_handoff_button(username, run_id, language) if username else None
        return say("handoff_private_only", language), markup

    async def close_pressed(self, update: Update, data: CloseHandoffData) -> None:
        """Close on a handoff's header in the staff group: staff members only."""
        query, user = update.callback_query, update.effective_user
        assert query is not None and user is not None
        if self.handoff is None or not self.handoff.is_staff(user.id):
            await self._answer_quietly(query, say("toast_staff_only", self._language(update)))
            return
        closed = await self.handoff.close(data.handoff_id, by=user.id)
        await self._answer_quietly(
            query, say("toast_closed" if closed else "toast_handled", Language.EN)
        )
        pressed = query.message
        if closed is not None and pressed is not None:
            try:
                await query.get_bot().edit_message_reply_markup(pressed.chat.id, pressed.message_id)
            except TelegramError as exc:
                log.info("close button not removed: %s", exc)

    async def staff_group(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Anything in the staff group: a staff member's message in a customer's topic goes
        to that customer; everything else is ignored (never answered by the agent)."""
        message = update.effective_message
        if message is None or self.handoff is None:
            return
        desk, edited = self.handoff, update.edited_message is not None

        async def work() -> None:
            ignored = await desk.from_staff(message, edited=edited, update_id=update.update_id)
            if ignored is not None:
                log.debug("staff group message not relayed: %s", ignored.value)

        context.application.create_task(self.chats.run(message.chat_id, work()), update=update)

    async def close_command(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """/close in a customer's topic (staff only)."""
        topic, user = self._staff_topic(update)
        if topic is not None and user is not None and self.handoff is not None:
            await self.handoff.close_topic(topic, by=user)

    async def reopen_command(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """/reopen in a customer's topic (staff only): hand the customer over again."""
        topic, user = self._staff_topic(update)
        if topic is not None and user is not None and self.handoff is not None:
            await self.handoff.reopen(topic, by=user)

    def _staff_topic(self, update: Update) -> tuple[int | None, int | None]:
        message, user = update.effective_message, update.effective_user
        if message is None or user is None or self.handoff is None:
            return None, None
        if not self.handoff.is_staff(user.id) or not message.is_topic_message:
            return None, None
        return message.message_thread_id, user.id


class StaffCommands(_Role):
    """Staff reading the history: /runs (and its paging), /run, /stats, /status."""

    async def status_command(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """/status in the staff group (staff only, anyone else is ignored as in that group):
        what `/readyz` says, in words, where it was asked (a topic or General)."""
        message, user = update.effective_message, update.effective_user
        if message is None or user is None or self.handoff is None:
            return
        if not self.handoff.is_staff(user.id):
            return
        if self.readiness is None:
            text = "Status is not available in this process (no health checks run here)."
        else:
            text = await self.readiness()
        await self._reply(update, html.escape(text))

    async def runs(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """/runs [status]: recent runs for staff, paged with ◀ ▶."""
        if not await self._staff_only(update):
            return
        status = None
        if context.args:
            try:
                status = RunStatus(context.args[0].lower())
            except ValueError:
                statuses = ", ".join(s.value for s in RunStatus)
                await self._reply(update, f"Unknown status. Use one of: {statuses}")
                return
        text, markup = await self._runs_page(status, 0)
        await self._reply(update, text, markup)

    async def page(self, update: Update, data: PageData) -> None:
        query = update.callback_query
        assert query is not None
        refusal = self._staff_refusal(update)
        if refusal is not None:
            await self._answer_quietly(query, say(refusal, self._language(update)))
            return
        text, markup = await self._runs_page(data.status, data.offset)
        await self._answer_quietly(query, None)
        pressed, bot = query.message, query.get_bot()
        if pressed is None:
            return
        # A message the bot can no longer see (older than 48 h, or deleted) arrives with
        # date 0 and only its ids: the page it asked for comes as a new message instead.
        if not pressed.is_accessible:
            await bot.send_message(
                pressed.chat.id, text, parse_mode=ParseMode.HTML, reply_markup=markup
            )
            return
        try:
            await bot.edit_message_text(
                text,
                chat_id=pressed.chat.id,
                message_id=pressed.message_id,
                parse_mode=ParseMode.HTML,
                reply_markup=markup,
            )
        except BadRequest as exc:
            if "not modified" not in str(exc):
                raise

    async def _runs_page(
        self, status: RunStatus | None, offset: int
    ) -> tuple[str, InlineKeyboardMarkup | None]:
        page = await self.store.history.list_runs(
            status=status, offset=offset, limit=RUNS_PAGE_SIZE
        )
        buttons = []
        if offset > 0:
            prev_offset = max(0, offset - RUNS_PAGE_SIZE)
            buttons.append(InlineKeyboardButton("◀", callback_data=page_data(status, prev_offset)))
        if page.next_cursor is not None:
            next_offset = offset + RUNS_PAGE_SIZE
            buttons.append(InlineKeyboardButton("▶", callback_data=page_data(status, next_offset)))
        markup = InlineKeyboardMarkup([buttons]) if buttons else None
        return format_runs_page(page.items, status, offset), markup

    async def run_timeline(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """/run <id>: one run's timeline for staff (steps, retries, decisions)."""
        if not await self._staff_only(update):
            return
        if not context.args:
            await self._reply(update, "Usage: /run &lt;run id&gt;")
            return
        run = await self.store.load_run(context.args[0].strip())
        if run is None:
            await self._reply(update, "No such run.")
            return
        timeline = await self.store.history.timeline(run.id)
        for part in split_message(format_timeline(run, timeline)):
            await self._reply(update, part)

    async def stats(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """/stats: runs by status and failures by type and tool, last 24 h and 7 days; handoffs
        to a person per day and the median time to the first staff reply."""
        if not await self._staff_only(update):
            return
        now = utcnow()
        periods = []
        for label, delta in (
            ("last 24 h", timedelta(hours=24)),
            ("last 7 days", timedelta(days=7)),
        ):
            since = now - delta
            periods.append(
                (
                    label,
                    await self.store.history.status_counts(since),
                    await self.store.history.failure_counts(since),
                )
            )
        week = now - timedelta(days=7)
        handoffs = format_handoff_stats(
            await self.store.history.handoffs_per_day(week),
            await self.store.history.median_first_reply_s(week),
        )
        await self._reply(update, format_stats(periods) + "\n\n" + handoffs)


class CustomerMessages(_Role):
    """What customers write: text, edits, other messages, /start and /help."""

    def __init__(self, state: BotState, handoffs: HandoffHooks) -> None:
        super().__init__(state)
        self.handoffs = handoffs

    async def remember_sender(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Before any handler: who wrote or pressed, for the names staff read (issue 23)."""
        user = update.effective_user
        if self.handoff is not None and user is not None and not user.is_bot:
            await self.handoff.saw(user.id, user.first_name, user.username)

    async def help(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """/start and /help: what the bot can do, with examples in the user's language.
        "/start human[-<run>]" (the "continue privately" link of a handoff asked for in a
        group) hands the customer over here instead."""
        message = update.effective_message
        if message is None:
            return
        asks, run_id = start_handoff_run(list(context.args or ()))
        if asks and self.handoff is not None:
            await self.handoffs.human(update, context, run_id=run_id)
            return
        linker, user = self.state.linker, update.effective_user
        if linker is not None and user is not None and message.chat.type == ChatType.PRIVATE:
            token = link_token(message) if update.message is not None else None
            if token is not None or was_redacted(update):
                # In the chat's order: a double tap's second claim sees the first's result.
                link = self._link(message, linker, user.id, token, self._language(update))
                context.application.create_task(
                    self.chats.run(message.chat_id, link), update=update
                )
                return
        await message.reply_text(say("help", self._language(update)))

    async def _link(
        self,
        message: Message,
        linker: CustomerDirectory,
        user_id: int,
        token: str | None,
        language: Language,
    ) -> None:
        """Hand the token to the shop and say what came of it. `token` None: a replayed
        update whose token was never stored: linked already, or asked to press again."""
        trace_id = secrets.token_hex(8)
        if token is None:
            ctx = ToolContext(user_id=user_id, trace_id=trace_id, run_id="link", step_id="link")
            try:
                found = await linker.resolve(ctx) is not None
            except ToolFailure:
                found = False
            key = "linked" if found else "link_interrupted"
        else:
            outcome = await linker.claim(user_id, token, trace_id)
            key = LINK_TEXTS[outcome]
        await self._reply_quietly(message, say(key, language))

    async def text(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """A question: the plan, step messages and the answer follow in the background.
        A "/word" no command handler took comes here too, as text (`bot.slash`)."""
        message, user = update.effective_message, update.effective_user
        if message is None or user is None:
            return
        text = (message.text or "").strip()
        language = self._language(update)
        slash = _leading_slash(message, context.bot.username)
        if slash is not None:
            if slash.other_bot:
                return  # "/start@another_bot" in a group: not ours
            hint = user.language_code
            language = language_of(slash.rest, hint) if slash.rest else language
        private = message.chat.type == ChatType.PRIVATE
        customer = Customer(message.chat_id, user.id, user.full_name, language, private=private)
        context.application.create_task(
            self.chats.run(message.chat_id, self._customer_text(message, customer, text, slash)),
            update=update,
        )

    async def _customer_text(
        self, message: Message, customer: Customer, text: str, slash: Slash | None = None
    ) -> None:
        """In the chat's order: relayed to staff while a handoff is open (the agent stays
        silent), else asked. A "/word" with words after it is asked without its slash; a
        "/word" alone is told the real commands (in a group only when addressed to us)."""
        if not readable(text):
            await self._reply_quietly(message, say("unreadable", customer.language))
            return
        if await self.handoffs.relayed(message):
            return
        if slash is not None:
            if not slash.request:
                if customer.private or slash.addressed:
                    known = "/help, /human" if self._staffed else "/help"
                    unknown = say("unknown_command", customer.language)
                    await self._reply_quietly(
                        message, unknown.format(command=slash.command, commands=known)
                    )
                return
            text = slash.request
        if not text:
            await self._reply_quietly(message, say("empty", customer.language))
            return
        if len(text) > MAX_REQUEST_CHARS:
            await self._reply_quietly(message, say("too_long", customer.language))
            return
        hint = message.from_user.language_code if message.from_user else None
        await self.ask(message, customer.user_id, text, hint, customer)

    async def ask(
        self,
        message: Message,
        user_id: int,
        text: str,
        hint: str | None,
        customer: Customer | None = None,
        *,
        chosen: bool = False,
    ) -> None:
        """Ask the agent in the chat's topic; `chosen`: an option picked from a clarifying
        question (`Agent.ask`: it means no earlier order unless it names one)."""
        TOPIC.set(message.message_thread_id if message.is_topic_message else None)
        if customer is not None:
            CUSTOMER.set(customer)
        try:
            await self.agent.ask(
                text,
                user_id=user_id,
                chat_id=message.chat_id,
                language_hint=hint,
                chosen=chosen,
            )
        except StorageUnavailable:
            log.exception("storage unavailable while asking")
            await self._reply_quietly(message, say("busy", language_of(text, hint)))

    async def edited(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """An edited message never starts (or changes) anything: a polite note to send it as
        a new message, under the edited one."""
        message = update.edited_message
        if message is not None and message.from_user is not None:
            # Shown to staff, marked edited; each edit its own relay, keyed by its update.
            # Never a `/start <payload>`: it may be a link token, a credential (`bot.link`).
            if not readable(message.text or ""):
                await self._reply_quietly(message, say("unreadable", self._language(update)))
                return
            secret = start_payload(message.text) is not None
            if not secret and await self.handoffs.relayed(
                message, edited=True, update_id=update.update_id
            ):
                return
            await self._reply_quietly(message, say("edited", self._language(update)), quote=True)

    async def not_text(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Stickers, photos, voice…: a polite note that only text is understood (copied to
        staff instead while a handoff is open)."""
        message = update.effective_message
        if message is None:
            return
        language = self._language(update)

        async def work() -> None:
            if not await self.handoffs.relayed(message):
                await self._reply_quietly(message, say("text_only", language))

        context.application.create_task(self.chats.run(message.chat_id, work()), update=update)


class Decisions(_Role):
    """Button presses: Confirm / Cancel (a customer's or staff's), clarifying options, and
    the presses that belong to another role (paging, a person, closing a handoff)."""

    def __init__(
        self,
        state: BotState,
        customers: CustomerMessages,
        staff: StaffCommands,
        handoffs: HandoffHooks,
    ) -> None:
        super().__init__(state)
        self.customers = customers
        self.staff = staff
        self.handoffs = handoffs

    async def button(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Confirm / Cancel, or staff paging. Always answers the press with a short toast.

        The decision is claimed here and shown on the message at once (buttons removed);
        the rest of the run continues in the background, in the chat's order. A decision
        counts only when pressed on the prompt it was issued for: the claim is given the
        pressed message, and the data replayed onto any other message is stale.
        """
        query, user = update.callback_query, update.effective_user
        if query is None or user is None:
            return
        parsed = parse_callback(query.data)
        language = self._language(update)
        if isinstance(parsed, PageData):
            await self.staff.page(update, parsed)
            return
        if isinstance(parsed, ChoiceData):
            await self._choice(update, context, parsed)
            return
        if isinstance(parsed, PersonData):
            await self.handoffs.person(update, context, parsed)
            return
        if isinstance(parsed, CloseHandoffData):
            await self.handoffs.close_pressed(update, parsed)
            return
        pressed = query.message  # may be inaccessible (older than 48 h): ids only
        if not isinstance(parsed, DecisionData) or pressed is None:
            await self._answer_quietly(query, say("toast_invalid", language))
            return
        where = Where.of(pressed)
        # A press in the staff group is a staff approval (issue 14): staff members only.
        staff = self.handoff is not None and where.chat_id == self.handoff.staff_chat_id
        if staff and (self.handoff is None or not self.handoff.is_staff(user.id)):
            await self._answer_quietly(query, say("toast_staff_only", language))
            return
        try:
            approvals = 1
            if staff:
                before = await self._staff_before_claim(query, where, parsed, user.id, language)
                if before is None:
                    return  # answered: stale, their own order, reasons shown, first of two
                approvals = before
            await self.progress.prompt_settled(parsed.run_id)
            outcome = await self.agent.claim(
                parsed.run_id,
                user_id=user.id,
                approved=parsed.approved,
                nonce=parsed.nonce,
                prompt=where.prompt,
                staff=staff,
                approvals=approvals,
            )
        except StorageUnavailable:
            log.exception("storage unavailable on a button press")
            await self._answer_quietly(query, say("toast_busy", language))
            return
        run = outcome.run
        if run is not None and not staff:
            language = run.language
        toast = {
            ClaimResult.OK: "toast_confirmed" if parsed.approved else "toast_cancelled",
            ClaimResult.NOT_ALLOWED: "toast_not_yours",
            ClaimResult.ALREADY_HANDLED: "toast_handled",
            ClaimResult.STALE: "toast_invalid",
            ClaimResult.NOT_FOUND: "toast_invalid",
            ClaimResult.EXPIRED: "toast_expired",
        }[outcome.result]
        await self._answer_quietly(query, say(toast, language))
        if run is None or outcome.result not in (ClaimResult.OK, ClaimResult.EXPIRED):
            return
        step_id = paused_step_id(run)
        bot = context.bot
        if staff:
            await self._staff_decided(context, where, run, step_id, parsed, user.id)
            return
        if outcome.result is ClaimResult.EXPIRED:
            if step_id:
                await _edit_quietly(bot, where, decision_text(run, step_id, "expired"))
            await _send_quietly(bot, where, run.answer or "")
            return
        if step_id:
            key = "you_confirmed" if parsed.approved else "you_cancelled"
            await _edit_quietly(bot, where, decision_text(run, step_id, key))
            self.progress.adopt(run, step_id, where.message_id, where.thread_id)
        private = run.chat_id == run.user_id
        customer = Customer(run.chat_id, user.id, user.full_name, run.language, private=private)
        context.application.create_task(
            self.chats.run(where.chat_id, self._proceed(bot, where, run, customer)),
            update=update,
        )

    async def _choice(
        self, update: Update, context: ContextTypes.DEFAULT_TYPE, data: ChoiceData
    ) -> None:
        """An option of a clarifying question: claimed once, only for the customer who was
        asked and only on the message the options were sent with (as a Confirm); the
        conversation goes on, in the question's chat, as if they had written that option.
        The data replayed in another chat or onto another message is refused there and
        leaves the question open."""
        query, user = update.callback_query, update.effective_user
        assert query is not None and user is not None
        language = self._language(update)
        pressed = query.message  # may be inaccessible (older than 48 h): ids only
        if pressed is None:
            await self._answer_quietly(query, say("toast_invalid", language))
            return
        where = Where.of(pressed)
        try:
            outcome, text = await self.agent.claim_choice(
                data.run_id,
                user_id=user.id,
                option=data.option,
                nonce=data.nonce,
                prompt=where.prompt,
            )
        except StorageUnavailable:
            log.exception("storage unavailable on a clarifying option")
            await self._answer_quietly(query, say("toast_busy", language))
            return
        run = outcome.run
        if run is not None:
            language = run.language
        toast = {
            ClaimResult.OK: "toast_chosen",
            ClaimResult.NOT_ALLOWED: "toast_not_yours",
            ClaimResult.ALREADY_HANDLED: "toast_handled",
            ClaimResult.EXPIRED: "toast_expired",
        }.get(outcome.result, "toast_invalid")
        await self._answer_quietly(query, say(toast, language))
        if outcome.result is not ClaimResult.OK or run is None or text is None:
            return
        if isinstance(pressed, Message) and run.clarify is not None:
            chosen = run.clarify.options[data.option].label
            await _edit_quietly(
                context.bot, where, html.escape(f"{run.clarify.question}\n→ {chosen}")
            )
            message = pressed
            context.application.create_task(
                self.chats.run(
                    message.chat_id,
                    self.customers.ask(message, user.id, text, language, chosen=True),
                ),
                update=update,
            )

    async def _staff_before_claim(
        self, query: Any, where: Where, data: DecisionData, staff_id: int, language: Language
    ) -> int | None:
        """What a staff member's press does before the claim (issue 20). Every press is
        checked against the message it was pressed on first: data replayed onto another
        prompt changes nothing there (no buttons replaced, no text overwritten, no approval
        counted) and the toast says the button is not valid; nobody decides their own order.
        Then Reject asks why (the reason's press decides), and a four-eyes Approve is
        recorded as a first approval. Returns None when the press was answered here, else
        how many distinct approvals the claim completes (the claim checks it all again in
        its one conditional update)."""
        assert self.handoff is not None
        run = await self.store.load_run(data.run_id)
        expires_before = self.agent.now() - self.agent.approval_ttl
        pressed = (where.chat_id, where.message_id)
        check = check_staff_press(
            run, presser=staff_id, nonce=data.nonce, pressed=pressed, expires_before=expires_before
        )
        if check is not StaffCheck.OK:
            if check is StaffCheck.EXPIRED:
                return 1  # the claim closes it as expired and tells both sides
            await self._answer_quietly(query, say(STAFF_CHECK_TOASTS[check], language))
            return None
        assert run is not None and run.pause is not None
        if not data.approved:
            if data.reason is not None:
                return 1
            # Reject asks why first; the reason's press decides (same message, same nonce).
            await self._answer_quietly(query, say("toast_pick_reason", language))
            try:
                await query.get_bot().edit_message_reply_markup(
                    where.chat_id,
                    where.message_id,
                    reply_markup=reason_buttons(data.run_id, data.nonce),
                )
            except TelegramError as exc:
                log.info("reason buttons not shown: %s", exc)
            return None
        needed = needed_approval(run.step(run.pause.step_id).args, self.agent.executor.staff_rule)
        if needed.approvals < 2:
            return 1
        return await self._first_of_two(query, where, run, data, staff_id, language)

    async def _first_of_two(
        self,
        query: Any,
        where: Where,
        run: Run,
        data: DecisionData,
        staff_id: int,
        language: Language,
    ) -> int | None:
        """Four eyes: an approval that needs a second staff member is recorded (who, when)
        and waits; None when this press was such a first approval (or a repeat by the same
        person, or it did not count), so nothing is claimed yet. The second distinct
        approval goes on to the claim, which decides once whatever the number of presses."""
        assert self.handoff is not None and run.pause is not None
        handoffs = self.handoff.handoffs
        if staff_id in await handoffs.approvals_of(run.id, data.nonce):
            await self._answer_quietly(query, "You approved already; a second staff member must.")
            return None
        now = self.agent.now()
        approvers = await handoffs.approve_once(
            run.id,
            data.nonce,
            staff_id,
            now,
            prompt=where.prompt,
            expires_before=now - self.agent.approval_ttl,
        )
        if staff_id not in approvers:  # the pause moved on meanwhile: say why
            check = check_staff_press(
                await self.store.load_run(run.id),
                presser=staff_id,
                nonce=data.nonce,
                pressed=(where.chat_id, where.message_id),
                expires_before=now - self.agent.approval_ttl,
            )
            if check is StaffCheck.EXPIRED:
                return 1  # the claim closes it as expired
            await self._answer_quietly(
                query, say(STAFF_CHECK_TOASTS.get(check, "toast_handled"), language)
            )
            return None
        needed = needed_approval(run.step(run.pause.step_id).args, self.agent.executor.staff_rule)
        verdict = judge_press(
            needed,
            presser=staff_id,
            customer=run.user_id,
            staff=self.staff_ids,
            approve=True,
            earlier_approvals=[a for a in approvers if a != staff_id],
        )
        if verdict is not Verdict.RECORD_APPROVAL:
            return needed.approvals
        await self.store.add_event(run.id, EventKind.NOTICE, f"first approval by staff {staff_id}")
        await self._answer_quietly(query, "Recorded. A second staff member must approve too.")
        goal = html.escape(run.step(run.pause.step_id).goal)
        who = html.escape(await self.handoff.name_of(staff_id))
        try:
            await query.get_bot().edit_message_text(
                f"<b>Approval needed</b> (two staff members)\n{goal}\n"
                f"1 of 2 approvals: by {who}. Another staff member can approve or reject.",
                chat_id=where.chat_id,
                message_id=where.message_id,
                parse_mode=ParseMode.HTML,
                reply_markup=query.message.reply_markup if query.message else None,
            )
        except TelegramError as exc:
            log.info("four eyes: prompt not updated: %s", exc)
        return None

    async def _staff_decided(
        self,
        context: ContextTypes.DEFAULT_TYPE,
        where: Where,
        run: Run,
        step_id: str | None,
        decision: DecisionData,
        staff_id: int,
    ) -> None:
        """A staff member's Approve/Reject was claimed (or found expired): the topic's prompt
        says who decided, the customer is told, and the run goes on in the customer's chat."""
        bot = context.bot
        customer = Where(run.chat_id, 0)
        goal = html.escape(run.step(step_id).goal) if step_id else ""
        # The customer's "waiting for our team" message, edited in place to the decision
        # and then by the step's own progress (never a second message for the same step).
        waiting = self.progress.waiting_message(run.id)
        shown = None
        if waiting is not None and waiting[0] == step_id:
            shown = Where(run.chat_id, waiting[1], waiting[2])
            customer = Where(run.chat_id, 0, waiting[2])
        if run.status is RunStatus.EXPIRED:
            await _edit_quietly(bot, where, f"⌛ {goal} — expired, nothing was done")
            if shown is not None and step_id:
                await _edit_quietly(bot, shown, decision_text(run, step_id, "expired"))
            await _send_quietly(bot, customer, run.answer or "")
            return
        approved = decision.approved
        reason = decision.reason if decision.reason in REASON_LABELS else "n"
        verdict = "✅ approved" if approved else "🚫 rejected"
        label = REASON_LABELS[reason] if reason != "n" else ""
        why = f" ({label})" if label else ""
        who = html.escape(await self.handoff.name_of(staff_id)) if self.handoff else str(staff_id)
        await _edit_quietly(bot, where, f"{verdict} by {who}: {goal}{why}")
        note = None
        if not approved and label:
            # Said once, under the run's own answer ("Our team did not approve …"): the
            # customer reads one message for a Reject, not a notice and then the answer.
            note = say(f"reject_reason_{reason}", run.language)
            try:  # on the run's timeline next to the claim (`decision_claimed`)
                await self.store.add_event(
                    run.id, EventKind.NOTICE, f"rejected by staff {staff_id}: {label}"
                )
            except StorageUnavailable:
                log.exception("reject reason not noted")
        if shown is not None and step_id:
            key = "team_approved_step" if approved else "team_declined_step"
            await _edit_quietly(bot, shown, decision_text(run, step_id, key))
            self.progress.adopt(run, step_id, shown.message_id, shown.thread_id)
        if approved:
            await _send_quietly(bot, customer, say("team_approved", run.language))

        async def proceed_and_report() -> None:
            ended = await self._proceed(bot, customer, run, note=note)
            if approved and ended is not None and step_id:
                await self._staff_outcome(bot, where, ended, step_id, who)

        context.application.create_task(self.chats.run(run.chat_id, proceed_and_report()))

    async def _staff_outcome(
        self, bot: Bot, where: Where, run: Run, step_id: str, who: str
    ) -> None:
        """The staff prompt edited once more, to what the shop did with the approved step:
        whoever approved learns that a refund went through or why the shop refused it."""
        text = staff_outcome_text(run, step_id, who, self.agent.executor.catalog)
        if text is None:
            return  # not ended here (taken over, paused again): "approved by" stays true
        goal = html.escape(run.step(step_id).goal)
        await _edit_quietly(bot, where, f"{text}\n<i>{goal}</i>")

    async def _proceed(
        self,
        bot: Bot,
        where: Where,
        run: Run,
        customer: Customer | None = None,
        *,
        note: str | None = None,
    ) -> Run | None:
        """Go on with a claimed run in its chat's turn; `customer`: who pressed, when it was
        the run's customer (staff then read their name, not their id); `note`: a line for
        the end of the run's answer. The run as it then stands, None when storage failed."""
        TOPIC.set(where.thread_id)
        ANSWER_NOTE.set(note)
        if customer is not None:
            CUSTOMER.set(customer)
        try:
            return await self.agent.proceed(run)
        except StorageUnavailable:
            log.exception("storage unavailable while resuming", extra={"trace_id": run.trace_id})
            await _send_quietly(bot, where, say("busy_resume", run.language))
            return None


class StepwiseBot(_Role):
    """The conversation's roles, wired together; `bot.application` registers their handlers.

    `customers` (what customers write), `decisions` (button presses), `staff` (staff
    commands) and `handoffs` (a person takes over) share one `BotState`.
    """

    def __init__(
        self,
        agent: Agent,
        store: RunStore,
        progress: TelegramProgress,
        *,
        staff_ids: frozenset[int] = frozenset(),
        handoff: HandoffDesk | None = None,
        linker: CustomerDirectory | None = None,
    ) -> None:
        super().__init__(
            BotState(agent, store, progress, staff_ids=staff_ids, handoff=handoff, linker=linker)
        )
        self.handoffs = HandoffHooks(self.state)
        self.staff = StaffCommands(self.state)
        self.customers = CustomerMessages(self.state, self.handoffs)
        self.decisions = Decisions(self.state, self.customers, self.staff, self.handoffs)
        if handoff is not None:
            progress.answer_hook = self.handoffs.answer_hook
            progress.staff_prompt_hook = handoff.post_staff_prompt

    @property
    def readiness(self) -> Callable[[], Awaitable[str]] | None:
        return self.state.readiness

    @readiness.setter
    def readiness(self, value: Callable[[], Awaitable[str]] | None) -> None:
        self.state.readiness = value

    async def on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Log everything that escaped a handler; the customer gets a short apology."""
        log.error("handler error", exc_info=context.error)
        if isinstance(update, Update) and update.effective_message is not None:
            await self._reply_quietly(update.effective_message, say("busy", self._language(update)))


@dataclass(frozen=True)
class Where:
    """A message a button was pressed on, by ids: all an inaccessible message still has."""

    chat_id: int
    message_id: int
    thread_id: int | None = None

    @classmethod
    def of(cls, message: MaybeInaccessibleMessage) -> Where:
        thread = None
        if isinstance(message, Message) and message.is_accessible and message.is_topic_message:
            thread = message.message_thread_id
        return cls(message.chat.id, message.message_id, thread)

    @property
    def prompt(self) -> PromptRef:
        return PromptRef(chat_id=self.chat_id, message_id=self.message_id)


def readable(text: str) -> bool:
    """Whether `text` is valid Unicode text. A lone surrogate (half of an emoji, sent by a
    buggy client) has no UTF-8 form: neither database can store it, so a run or a relay
    of it would fail every time, and the customer is asked to type it again instead."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _leading_slash(message: Message, bot_username: str | None) -> Slash | None:
    """The message's leading "/word", if Telegram marked one (a bot_command entity at 0)."""
    entities = message.entities or ()
    first = entities[0] if entities else None
    if first is None or first.type != MessageEntityType.BOT_COMMAND or first.offset != 0:
        return None
    return read_slash(message.text or "", first.length, bot_username)


async def _edit_quietly(bot: Bot, where: Where, text: str) -> None:
    """Replace a message's text; an edit without reply_markup also removes its buttons."""
    try:
        await bot.edit_message_text(
            text, chat_id=where.chat_id, message_id=where.message_id, parse_mode=ParseMode.HTML
        )
    except TelegramError as exc:
        log.info("edit failed: %s", exc)


async def _send_quietly(bot: Bot, where: Where, text: str) -> None:
    """A new message (plain text) next to the pressed one, in its forum topic if any."""
    try:
        await bot.send_message(where.chat_id, text, message_thread_id=where.thread_id)
    except TelegramError as exc:
        log.warning("could not send: %s", exc)


def opened_text(opened: Opened, language: Language) -> str:
    """What the customer is told when they asked for a person: the truth about who replies."""
    if not opened.staffed:
        return say("handoff_unstaffed", language)
    return say("handoff_opened" if opened.new else "handoff_already", language)


def paused_step_id(run: Run) -> str | None:
    """The step a claimed (or expired) pause was about, as the run records it.

    Exact, not a guess: a claimed pause stays on the run (`run.pause`; the claim clears
    only its nonce, so it cannot be pressed again). An expired pause is closed by the agent,
    which cancels that step and drops `run.pause`; since a run has at most one open pause
    and every decided pause leaves its `approval` on the step, the one step that paused
    (`pause_reason`) with no approval and ended cancelled is the expired one.
    """
    if run.pause is not None:
        return run.pause.step_id
    for step in run.steps:
        if (
            step.pause_reason is not None
            and step.approval is None
            and step.status is StepStatus.CANCELLED
        ):
            return step.id
    return None
