"""A person takes over (issue 14): a customer's conversation handed to staff in a forum topic.

The staff group (`STEPWISE_STAFF_CHAT_ID`) is a forum supergroup where the bot is an admin
that can manage topics. Each customer gets ONE topic (named with their name and id, reused
for later handoffs, recreated when staff deleted it); a handoff posts a header there (who,
the request, the plan with each step's outcome and reason, a link to the run) with a Close
button. While a handoff is open the agent stays silent for that customer, and messages are
copied both ways (`copyMessage`): the customer's into the topic, staff members' from the
topic to the customer. `/close` (or Close) ends it, `/reopen` opens it again.

Decisions are pure functions at the top (what a start-up check found wrong, which staff
group messages are relayed, which answers offer "Talk to a person", the header); the
`HandoffDesk` below does the Telegram calls and the writes around them.

Durability (item 7): the customer↔topic mapping and the open state are rows
(`storage.handoffs`), so a restarted bot relays for open handoffs at once. Every relay is
recorded before its copy and marked after (`Handoffs.record_relay` / `mark_copied`);
`HandoffDesk.resend_pending` copies on start what a crash left unmarked.
"""

from __future__ import annotations

import asyncio
import html
import logging
import secrets
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol

from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, Message
from telegram.constants import ParseMode
from telegram.error import BadRequest, Forbidden, TelegramError

from agent_core.answers.compose import step_progress
from agent_core.answers.notes import is_flagged
from agent_core.models import (
    ErrorType,
    EventKind,
    Language,
    PlanStep,
    PromptRef,
    Run,
    RunStatus,
    StepStatus,
    utcnow,
)
from bot import metrics
from bot.callbacks import close_handoff_data, decision_data, person_data, reason_data
from bot.outcomes import refund_context
from bot.texts import say
from bot.textsplit import MAX_MESSAGE_UNITS, split_message, utf16_units
from storage.handoffs import (
    Direction,
    Handoff,
    Handoffs,
    Relay,
    Topic,
    Trigger,
    display_name,
)
from storage.history import History

log = logging.getLogger(__name__)

TOPIC_NAME_LIMIT = 128  # Telegram's limit for a forum topic's name
EDIT_MARK = "✏️ "


# -- who the customer is -----------------------------------------------------------------


@dataclass(frozen=True)
class Customer:
    chat_id: int
    user_id: int
    name: str
    language: Language
    private: bool = True  # a private chat with the bot, not a group (`handoff_is_private`)


# The customer the current task serves (set where a customer's update is handled): a run's
# progress listener runs in that task, so its answer hook knows whom to hand off.
CUSTOMER: ContextVar[Customer | None] = ContextVar("stepwise_customer", default=None)


# -- pure decisions ----------------------------------------------------------------------


@dataclass(frozen=True)
class StaffChatFacts:
    """What `getChat` and `getChatMember` (of the bot) said about the staff group."""

    found: bool
    is_forum: bool = False
    bot_status: str | None = None  # "administrator", "member", …
    can_manage_topics: bool = False
    error: str | None = None


def staff_chat_problem(
    chat_id: int | None, facts: StaffChatFacts | None, *, has_staff: bool = True
) -> str | None:
    """ONE line saying what keeps handoffs from reaching staff, or None when all is well
    (`has_staff`: STEPWISE_STAFF_IDS names someone who may answer in the group)."""
    if chat_id is None:
        return (
            "human handoff: STEPWISE_STAFF_CHAT_ID is not set; handoffs are recorded and "
            "customers told no one can reply in Telegram yet"
        )
    if facts is None or not facts.found:
        why = f" ({facts.error})" if facts is not None and facts.error else ""
        return (
            f"human handoff: staff chat {chat_id} not reachable{why}; add the bot to the group "
            "and check STEPWISE_STAFF_CHAT_ID"
        )
    if not facts.is_forum:
        return f"human handoff: staff chat {chat_id} has no topics; enable Topics in the group"
    if facts.bot_status != "administrator" and facts.bot_status != "creator":
        return (
            f"human handoff: the bot is not an admin of staff chat {chat_id}; make it an admin "
            "with Manage Topics"
        )
    if not facts.can_manage_topics:
        return (
            f"human handoff: the bot cannot manage topics in staff chat {chat_id}; give it the "
            "Manage Topics right"
        )
    if not has_staff:
        return (
            "human handoff: STEPWISE_STAFF_IDS is empty, so nobody's replies in the staff chat "
            "reach customers; add the staff members' user ids"
        )
    return None


async def staff_chat_facts(bot: Bot, chat_id: int) -> StaffChatFacts:
    """Ask Telegram about the staff group (`getChat`, then `getChatMember` of the bot, whose
    id `bot` knows once initialized): what `staff_chat_problem` judges. Never raises a
    Telegram error: a failure is a fact too."""
    try:
        chat = await bot.get_chat(chat_id)
    except TelegramError as exc:
        return StaffChatFacts(found=False, error=str(exc))
    try:
        member = await bot.get_chat_member(chat_id, bot.id)
    except TelegramError as exc:
        return StaffChatFacts(found=True, is_forum=bool(chat.is_forum), error=str(exc))
    return StaffChatFacts(
        found=True,
        is_forum=bool(chat.is_forum),
        bot_status=str(member.status),
        can_manage_topics=bool(getattr(member, "can_manage_topics", False)),
    )


class Ignore(StrEnum):
    """Why a message in the staff group is not relayed to a customer."""

    OTHER_CHAT = "not the staff chat"
    NO_TOPIC = "not in a customer's topic"
    SERVICE = "service message"
    OWN = "the bot's own message"
    BOT = "another bot"
    NOT_STAFF = "not a staff member"
    COMMAND = "a command"


@dataclass(frozen=True)
class StaffMessage:
    """The facts of a staff-group message that decide whether it is relayed."""

    chat_id: int
    thread_id: int | None  # set only for a message in a topic (not General)
    sender_id: int | None
    sender_is_bot: bool
    is_service: bool
    is_command: bool


def staff_relay_decision(
    message: StaffMessage, *, staff_chat_id: int | None, staff_ids: frozenset[int], bot_id: int
) -> Ignore | None:
    """None: relay it to the topic's customer; else why it is ignored. Order matters only
    for the log line: every reason alone is enough."""
    if staff_chat_id is None or message.chat_id != staff_chat_id:
        return Ignore.OTHER_CHAT
    if message.is_service:
        return Ignore.SERVICE
    if message.sender_id == bot_id:
        return Ignore.OWN
    if message.sender_is_bot:
        return Ignore.BOT
    if message.sender_id is None or message.sender_id not in staff_ids:
        return Ignore.NOT_STAFF
    if message.thread_id is None:
        return Ignore.NO_TOPIC
    if message.is_command:
        return Ignore.COMMAND
    return None


def is_handoff_request(run: Run) -> bool:
    """The planner understood "I want a person" ("转人工", "real person", …)."""
    interp = run.interpretation
    return run.refusal == "handoff" or (interp is not None and interp.handoff is not None)


def offers_person(run: Run, previous: RunStatus | None) -> bool:
    """Whether an answer shows "Talk to a person": the run stopped, fell back, served not
    all of the request, or asked back a second time in a row (`previous`: the status of
    the chat's run before this one)."""
    if is_handoff_request(run) or run.status is RunStatus.PAUSED:
        return False
    if run.status is RunStatus.FAILED or run.stop_reason is not None:
        return True
    if any(step.status is StepStatus.FALLBACK for step in run.steps):
        return True
    if run.refusal == "unsupported" or is_flagged(run.interpretation):
        return True
    return run.status is RunStatus.NEEDS_CLARIFICATION and previous is RunStatus.NEEDS_CLARIFICATION


START_HUMAN = "human"  # the /start payload of the "continue privately" link


def handoff_is_private(customer: Customer) -> bool:
    """Whether a handoff may open where `customer` asked: only in a private chat.

    In a group, a handoff keyed by the chat made every member's later messages the
    requester's (copied into their topic, unnamed, the agent silent for them) and posted
    staff replies, with the requester's orders, addresses and refunds, to the whole group.
    Keying it by (chat, user) would fix the first, not the second: a person from our team
    talking about one member's orders in front of everyone is what a customer does not
    want, and a staff member cannot see who else is in the room. So a handoff is always a
    private conversation: in a group the asker is told so, with a button that opens their
    private chat with the bot and hands them over there at once (`/start human-<run>`,
    the run they asked in for context: their own, checked on arrival). The group keeps
    the agent for everyone, and nothing of the handoff is ever posted there."""
    return customer.private


def private_handoff_link(bot_username: str, run_id: str | None) -> str:
    """t.me's deep link to the bot's private chat, starting with a handoff: Telegram sends
    "/start <payload>" there (payload: 1-64 of A-Z a-z 0-9 _ -; run ids are hex)."""
    payload = f"{START_HUMAN}-{run_id}" if run_id else START_HUMAN
    return f"https://t.me/{bot_username}?start={payload}"


def start_handoff_run(args: list[str]) -> tuple[bool, str | None]:
    """/start's payload: (asks for a person, the run id it names if any)."""
    if not args:
        return False, None
    head, _, run_id = args[0].partition("-")
    if head != START_HUMAN:
        return False, None
    return True, run_id or None


def private_handoff_button(
    bot_username: str, run_id: str | None, language: Language
) -> InlineKeyboardMarkup:
    label = say("handoff_private_button", language)
    url = private_handoff_link(bot_username, run_id)
    return InlineKeyboardMarkup([[InlineKeyboardButton(label, url=url)]])


def topic_name(name: str, user_id: int) -> str:
    """ "Ada Lovelace · 10001", cut to Telegram's limit (the id always stays whole)."""
    suffix = f" · {user_id}"
    name = " ".join(name.split()) or "customer"
    room = TOPIC_NAME_LIMIT - len(suffix)
    if len(name) > room:
        name = name[: room - 1] + "…"
    return name + suffix


def run_link(console_url: str | None, run_id: str) -> str:
    if console_url:
        url = f"{console_url.rstrip('/')}/runs/{run_id}"
        return f'<a href="{html.escape(url, quote=True)}">{html.escape(run_id)}</a>'
    return f"<code>{html.escape(run_id)}</code> (/run {html.escape(run_id)})"


# Why a topic was opened, as staff read it (never the internal trigger word).
TRIGGER_WORDS = {
    Trigger.INTENT: "the customer asked for a person",
    Trigger.BUTTON: "the customer pressed Talk to a person",
    Trigger.COMMAND: "the customer sent /human",
    Trigger.REOPEN: "reopened by staff",
}


def header_text(handoff: Handoff, run: Run | None, console_url: str | None) -> str:
    """The topic's first message for a handoff (HTML, English: staff views are English)."""
    esc = html.escape
    lines = [
        f"<b>Handoff</b> · {TRIGGER_WORDS[handoff.trigger]} · opened "
        f"{handoff.opened_at.strftime('%Y-%m-%d %H:%M')} UTC",
        f"Customer: {esc(handoff.customer_name)} · id <code>{handoff.customer_user_id}</code>"
        f" · language {esc(handoff.language)}",
    ]
    if run is None:
        lines.append("No run: the customer asked for a person directly.")
    else:
        lines.append(f"Request: {esc(run.request_text)}")
        if run.steps:
            lines.append("<b>Plan</b>")
            for number, step in enumerate(run.steps, start=1):
                lines.append(f"{number}. {esc(step_progress(step, run))}")
                reason = _reason(step.skip_reason, step.fallback_reason, step.error)
                if reason:
                    lines.append(f"   reason: {esc(reason)}")
        else:
            lines.append(f"No plan ({esc(run.refusal or run.status.value)}).")
        lines.append(f"Run: {run_link(console_url, run.id)} · {run.status.value}")
    lines.append("Reply in this topic to answer the customer; /close or Close ends it.")
    return "\n".join(lines)


def _reason(skip: str | None, fallback: str | None, error: object) -> str | None:
    if skip:
        return skip
    if fallback:
        return fallback
    if error is not None:
        error_type = getattr(error, "type", None)
        return f"{getattr(error_type, 'value', error_type)}: {getattr(error, 'message', '')}"
    return None


def staff_prompt_text(run: Run, name: str, console_url: str | None) -> str:
    """What staff read above Approve/Reject (HTML, English like every staff view)."""
    assert run.pause is not None
    step = run.step(run.pause.step_id)
    esc = html.escape
    refunded = refund_context(run, step)
    return "\n".join(
        [
            "<b>Approval needed</b>",
            f"Customer: {esc(name)} · id <code>{run.user_id}</code>",
            f"Step: {esc(step.goal)}",
            *([refunded] if refunded else []),
            f"Request: {esc(run.request_text)}",
            f"Run: {run_link(console_url, run.id)}",
            "Only staff can decide; the customer waits for your answer.",
        ]
    )


def unclear_change(run: Run) -> PlanStep | None:
    """The step whose change may or may not have happened at the shop (`unknown_outcome`:
    the write got no clear answer and the reconcile read could not tell), if any."""
    if run.stop_reason != ErrorType.UNKNOWN_OUTCOME.value:
        return None
    return next((s for s in run.steps if s.status is StepStatus.FAILED), None)


def unclear_change_text(run: Run, step: PlanStep, name: str, console_url: str | None) -> str:
    """What staff read when nobody can tell whether a change happened (HTML, English)."""
    esc = html.escape
    return "\n".join(
        [
            "⚠️ <b>Check at the shop</b>: this may or may not have happened",
            f"Customer: {esc(name)}",
            f"Step: {esc(step.goal)}",
            "The shop gave no clear answer and reading it back failed too, so nothing was"
            " sent again. The customer was told it is being checked.",
            f"Run: {run_link(console_url, run.id)}",
        ]
    )


# What staff read on the preset reject reasons (the customer reads `reject_reason_*`).
REASON_LABELS = {
    "l": "Over the limit",
    "d": "Needs documents",
    "p": "Against policy",
    "n": "No reason",
}


def reason_buttons(run_id: str, nonce: str) -> InlineKeyboardMarkup:
    """A staff Reject asks why first: one button per preset reason (the customer is told
    it in their language)."""
    labels = list(REASON_LABELS.items())
    return InlineKeyboardMarkup(
        [
            [
                InlineKeyboardButton(label, callback_data=reason_data(run_id, nonce, code))
                for code, label in labels[i : i + 2]
            ]
            for i in range(0, len(labels), 2)
        ]
    )


def person_button(run_id: str, language: Language) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup(
        [[InlineKeyboardButton(say("talk_to_person", language), callback_data=person_data(run_id))]]
    )


def close_button(handoff_id: str) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup(
        [[InlineKeyboardButton("Close", callback_data=close_handoff_data(handoff_id))]]
    )


def marked_parts(text: str) -> list[tuple[str, str | None]]:
    """An edit's marked text as the messages that carry it: (text, parse_mode) each.

    Telegram takes at most 4096 UTF-16 units per message, and an edit of a message that
    was near that limit no longer fits once marked "✏️ edited: ". Such an edit is split
    (on line boundaries where it can, `bot.textsplit`) and every part is marked with the
    pencil and its place, "✏️ (1/2) edited: …", "✏️ (2/2) …", so staff (or the customer)
    see that all of it is one edit, in order. The parts are sent as HTML of the escaped
    text: the splitter measures what Telegram shows, so `<` and `&` count as one unit
    and are never cut in half. A text that fits goes as it always did, plain."""
    if utf16_units(text) <= MAX_MESSAGE_UNITS:
        return [(text, None)]
    body = text.removeprefix(EDIT_MARK)
    label_room = len(f"{EDIT_MARK}(99/99) ")
    chunks = split_message(html.escape(body, quote=False), MAX_MESSAGE_UNITS - label_room)
    total = len(chunks)
    return [
        (f"{EDIT_MARK}({number}/{total}) {chunk}", ParseMode.HTML)
        for number, chunk in enumerate(chunks, start=1)
    ]


# copyMessage's new caption: 0-1024 characters (media only; a text cannot be changed).
MAX_CAPTION_UNITS = 1024


def _takes_caption(message: Message) -> bool:
    """Media whose copy can carry a new caption (stickers, video notes and the like cannot)."""
    return bool(
        message.photo
        or message.video
        or message.document
        or message.audio
        or message.voice
        or message.animation
    )


def gives_up(exc: TelegramError) -> bool:
    """A refusal that will not change by trying again (blocked, message gone, bad request);
    network errors, flood waits and Telegram's own 5xx are retried on the next start."""
    return isinstance(exc, BadRequest | Forbidden)


def is_thread_gone(exc: TelegramError) -> bool:
    """Telegram's answer when a topic was deleted ("message thread not found")."""
    text = str(exc).lower()
    return isinstance(exc, BadRequest) and (
        "thread not found" in text or "topic_id_invalid" in text or "topic_deleted" in text
    )


# -- the desk ----------------------------------------------------------------------------


async def record_handoff(
    handoffs: Handoffs,
    customer: Customer,
    trigger: Trigger,
    run: Run | None,
    *,
    now: datetime,
    handoff_id: str,
) -> tuple[Handoff, bool]:
    """Record a handoff (or find the customer's open one): the bot's desk and the terminal
    chat open them the same way. The terminal chat's stays open without a topic; the bot
    gives it one on its next start or when the customer next writes in Telegram."""
    return await handoffs.open(
        Handoff(
            id=handoff_id,
            customer_chat_id=customer.chat_id,
            customer_user_id=customer.user_id,
            customer_name=customer.name,
            language=customer.language.value,
            trigger=trigger,
            run_id=run.id if run is not None else None,
            opened_at=now,
        )
    )


@dataclass(frozen=True)
class Opened:
    handoff: Handoff
    new: bool  # False: the customer already had one open
    staffed: bool  # a staff chat is configured (someone can reply in Telegram)


class HandoffStore(Protocol):
    """What the desk needs from the run store (`store.handoffs`, `history`, `load_run`)."""

    handoffs: Handoffs
    history: History

    async def load_run(self, run_id: str) -> Run | None: ...

    async def bind_prompt(
        self, run_id: str, nonce: str, prompt: PromptRef, message: str | None = None
    ) -> None: ...

    async def add_event(self, run_id: str, kind: EventKind, message: str | None = None) -> None: ...


class HandoffDesk:
    """The bot's side of handoffs: opening, relaying both ways, closing, the start-up work."""

    def __init__(
        self,
        bot: Bot,
        store: HandoffStore,
        *,
        staff_chat_id: int | None,
        staff_ids: frozenset[int],
        console_url: str | None = None,
        clock: Callable[[], datetime] = utcnow,
        new_id: Callable[[], str] = lambda: secrets.token_hex(6),
    ) -> None:
        self.bot = bot
        self.store = store
        self.staff_chat_id = staff_chat_id
        self.staff_ids = staff_ids
        self.console_url = console_url
        self._clock = clock
        self._new_id = new_id
        self._copying: dict[tuple[int, int, int], asyncio.Lock] = {}
        # Who was last seen by id, as stored (`saw`): written again only when it changed.
        self._seen: dict[int, tuple[str | None, str | None]] = {}

    @property
    def handoffs(self) -> Handoffs:
        return self.store.handoffs

    # -- names (issue 23 #8) -----------------------------------------------------------

    async def saw(self, user_id: int, first_name: str | None, username: str | None) -> None:
        """A person wrote or pressed: remember their name for staff views (stored once,
        and again when it changed; never fails the update)."""
        if self._seen.get(user_id) == (first_name, username):
            return
        try:
            await self.handoffs.remember_person(user_id, first_name, username, self._clock())
        except Exception:
            log.warning("could not remember the name of user %s", user_id, exc_info=True)
            return
        self._seen[user_id] = (first_name, username)

    async def name_of(self, user_id: int) -> str:
        """How staff read a person: "Sam (@sam)"; "user 10002" if never seen."""
        known = self._seen.get(user_id)
        if known is not None:
            return display_name(known[0], known[1], user_id)
        try:
            return await self.handoffs.name_of(user_id)
        except Exception:
            log.warning("could not read the name of user %s", user_id, exc_info=True)
            return display_name(None, None, user_id)

    # -- start -------------------------------------------------------------------------

    async def check_staff_chat(self) -> str | None:
        """Look at the staff group; log ONE line when something is wrong (never raises:
        customers are served whatever this finds)."""
        facts = None
        if self.staff_chat_id is not None:
            facts = await self._facts(self.staff_chat_id)
        problem = staff_chat_problem(self.staff_chat_id, facts, has_staff=bool(self.staff_ids))
        if problem is not None:
            # Not configured at all is a choice (info); configured but unusable is a fault.
            log.log(logging.INFO if self.staff_chat_id is None else logging.WARNING, problem)
        return problem

    async def _facts(self, chat_id: int) -> StaffChatFacts:
        return await staff_chat_facts(self.bot, chat_id)

    async def on_start(self) -> None:
        """The start-up work: the staff group check, a topic for every open handoff that has
        none (recorded by the terminal chat, or while the staff group was unreachable), then
        the copies a crash left unmade."""
        try:
            await self.check_staff_chat()
            if self.staff_chat_id is not None:
                for handoff in await self.handoffs.all_open():
                    if handoff.topic_id is None:
                        await self._post_header(handoff, await self._run_of(handoff))
            await self.resend_pending()
        except Exception:
            log.exception("human handoff: start-up work failed")

    async def resend_pending(self) -> int:
        """Copy every relay recorded and never marked (a crash between the two); returns
        how many were copied now."""
        copied = 0
        for relay in await self.handoffs.pending_relays():
            handoff = await self.handoffs.get(relay.handoff_id)
            if handoff is not None and await self._copy_once(relay, handoff):
                copied += 1
        return copied

    # -- opening -----------------------------------------------------------------------

    async def open(self, customer: Customer, trigger: Trigger, run: Run | None) -> Opened:
        """Open a handoff for `customer` (or find the open one): a topic with its header in
        the staff group. Without a staff group it is recorded and closed at once, so the
        agent keeps answering and the customer is not left waiting for nobody."""
        now = self._clock()
        handoff, new = await record_handoff(
            self.handoffs, customer, trigger, run, now=now, handoff_id=self._new_id()
        )
        if new and run is not None:
            await self._note(run.id, f"handed off to a person ({trigger.value}, {handoff.id})")
        if self.staff_chat_id is None:
            if new:
                await self.handoffs.close(handoff.id, by=None, at=now)
            return Opened(handoff, new, staffed=False)
        if new:
            handoff = await self._post_header(handoff, run)
            if handoff.topic_id is None:  # no topic (rights, Telegram down): nobody sees it
                await self.handoffs.close(handoff.id, by=None, at=now)
                return Opened(handoff, new, staffed=False)
        return Opened(handoff, new, staffed=True)

    async def _note(self, run_id: str, message: str) -> None:
        """The handoff on the run's own timeline (`/run`, the console's notes)."""
        try:
            await self.store.add_event(run_id, EventKind.NOTICE, message)
        except Exception:
            log.exception("human handoff: not noted on run %s", run_id)

    async def _post_header(self, handoff: Handoff, run: Run | None) -> Handoff:
        """Find (or make) the customer's topic and post this handoff's header in it."""
        assert self.staff_chat_id is not None
        text = header_text(handoff, run, self.console_url)
        for attempt in (1, 2):
            topic = await self._topic_for(handoff, fresh=attempt == 2)
            if topic is None:
                return handoff
            try:
                await self.bot.send_message(
                    self.staff_chat_id,
                    text,
                    message_thread_id=topic,
                    parse_mode=ParseMode.HTML,
                    reply_markup=close_button(handoff.id),
                )
            except TelegramError as exc:
                if is_thread_gone(exc) and attempt == 1:
                    continue  # staff deleted the topic: make a new one
                log.warning("human handoff: header not posted: %s", exc)
            await self.handoffs.set_topic(handoff.id, topic)
            return await self.handoffs.get(handoff.id) or handoff
        return handoff

    async def _topic_for(self, handoff: Handoff, *, fresh: bool = False) -> int | None:
        return await self._customer_topic(
            handoff.customer_chat_id, handoff.customer_user_id, handoff.customer_name, fresh=fresh
        )

    async def _customer_topic(
        self, chat_id: int, user_id: int, name: str, *, fresh: bool = False
    ) -> int | None:
        """The customer's topic id: the mapped one (reopened if staff closed it), or a new
        one (`fresh`: the mapped one is gone)."""
        assert self.staff_chat_id is not None
        mapped = await self.handoffs.topic_of(chat_id)
        if mapped is not None and mapped.staff_chat_id == self.staff_chat_id and not fresh:
            try:
                await self.bot.reopen_forum_topic(self.staff_chat_id, mapped.topic_id)
            except TelegramError as exc:
                if is_thread_gone(exc):
                    return await self._customer_topic(chat_id, user_id, name, fresh=True)
                # "TOPIC_NOT_MODIFIED": it is open already.
            return mapped.topic_id
        title = topic_name(name, user_id)
        try:
            created = await self.bot.create_forum_topic(self.staff_chat_id, title)
        except TelegramError as exc:
            log.warning("human handoff: no topic for customer %s: %s", user_id, exc)
            return None
        topic = Topic(chat_id, self.staff_chat_id, created.message_thread_id, title)
        await self.handoffs.map_topic(topic)
        return topic.topic_id

    # -- staff approval (item 6) -------------------------------------------------------

    async def post_staff_prompt(self, run: Run) -> bool:
        """A staff pause's Approve/Reject, in the customer's topic (made if needed), bound to
        that message: a press anywhere else (the customer's chat included) is stale."""
        pause = run.pause
        if self.staff_chat_id is None or pause is None or pause.nonce is None:
            return False
        name = await self._customer_name(run)
        approve = decision_data(run.id, pause.nonce, approved=True)
        reject = decision_data(run.id, pause.nonce, approved=False)
        buttons = InlineKeyboardMarkup(
            [
                [
                    InlineKeyboardButton("Approve", callback_data=approve),
                    InlineKeyboardButton("Reject", callback_data=reject),
                ]
            ]
        )
        text = staff_prompt_text(run, name, self.console_url)
        sent = await self._post_for_customer(run, name, text, buttons, "staff approval prompt")
        if sent is None:
            return False
        prompt = PromptRef(chat_id=self.staff_chat_id, message_id=sent.message_id)
        await self.store.bind_prompt(
            run.id, pause.nonce, prompt, "telegram: staff approval buttons shown"
        )
        return True

    async def alert_unclear_change(self, run: Run) -> bool:
        """A change nobody can say happened (`unclear_change`): staff read it in the
        customer's topic (made if needed) with the run's link, so a person checks at the
        shop. Sent with the customer's answer; an answer re-sent after a crash may alert
        twice, never zero times."""
        step = unclear_change(run)
        if self.staff_chat_id is None or step is None:
            return False
        name = await self._customer_name(run)
        text = unclear_change_text(run, step, name, self.console_url)
        return (
            await self._post_for_customer(run, name, text, None, "unclear-change alert") is not None
        )

    async def post_in_general(self, text: str, what: str) -> bool:
        """Post HTML `text` in the staff group's General topic (no customer's topic)."""
        if self.staff_chat_id is None:
            return False
        try:
            await self.bot.send_message(self.staff_chat_id, text, parse_mode=ParseMode.HTML)
        except TelegramError as exc:
            log.warning("%s not posted: %s", what, exc)
            return False
        return True

    async def _customer_name(self, run: Run) -> str:
        """The name staff know the run's customer by (never a bare id where a name is known)."""
        customer = CUSTOMER.get()
        name = customer.name if customer and customer.chat_id == run.chat_id else ""
        if not name:
            mapped = await self.handoffs.topic_of(run.chat_id)
            name = mapped.name.rsplit(" · ", 1)[0] if mapped else await self.name_of(run.user_id)
        return name

    async def _post_for_customer(
        self, run: Run, name: str, text: str, buttons: InlineKeyboardMarkup | None, what: str
    ) -> Message | None:
        """Post HTML `text` in the customer's topic, making it again if it was deleted."""
        assert self.staff_chat_id is not None
        for attempt in (1, 2):
            topic = await self._customer_topic(run.chat_id, run.user_id, name, fresh=attempt == 2)
            if topic is None:
                return None
            try:
                return await self.bot.send_message(
                    self.staff_chat_id,
                    text,
                    message_thread_id=topic,
                    parse_mode=ParseMode.HTML,
                    reply_markup=buttons,
                )
            except TelegramError as exc:
                if is_thread_gone(exc) and attempt == 1:
                    continue
                log.warning("%s not posted: %s", what, exc)
                return None
        return None

    # -- relaying ----------------------------------------------------------------------

    async def from_customer(
        self, message: Message, *, edited: bool = False, update_id: int = 0
    ) -> bool:
        """Relay a customer's message into their topic when a handoff is open; True when it
        was theirs to relay (the agent then stays silent). `update_id`: the update that
        brought an edit (each edit is its own relay, see `relay_variant`).

        Only the handoff's own customer is relayed: in a chat with several people (a
        group handoff recorded before handoffs became private-only, see
        `handoff_is_private`) another member's message is not theirs, and the agent
        answers it."""
        if self.staff_chat_id is None or message.chat_id == self.staff_chat_id:
            return False
        handoff = await self.handoffs.open_for(message.chat_id)
        if handoff is None:
            return False
        sender = message.from_user
        if sender is None or sender.id != handoff.customer_user_id:
            return False
        # Staff read who wrote: a text goes as "Ada:" and the text below it (a copy of a
        # text cannot be changed; copyMessage replaces captions of media only). One too
        # long for that, and media, are copied as they are, under the topic's name.
        name = " ".join((sender.first_name or "").split()) or handoff.customer_name
        text = None
        if edited:
            text = EDIT_MARK + f"{name} edited: " + (message.text or message.caption or "")
        elif message.text and utf16_units(f"{name}:\n{message.text}") <= MAX_MESSAGE_UNITS:
            text = f"{name}:\n{message.text}"
        caption = None
        if not edited and _takes_caption(message):
            named = f"{name}: {message.caption}" if message.caption else f"{name}:"
            caption = named if utf16_units(named) <= MAX_CAPTION_UNITS else None
        relay = Relay(
            handoff_id=handoff.id,
            direction=Direction.TO_STAFF,
            from_chat_id=message.chat_id,
            message_id=message.message_id,
            variant=relay_variant(edited, update_id),
            to_chat_id=self.staff_chat_id or 0,
            to_topic_id=handoff.topic_id,
            text=text,
            received_at=self._clock(),
            caption=caption,
        )
        await self._relay(relay, handoff)
        return True

    async def from_staff(
        self, message: Message, *, edited: bool = False, update_id: int = 0
    ) -> Ignore | None:
        """Relay a staff member's message in a customer's topic to that customer; returns
        why it was not relayed (None: relayed, or recorded for the start-up resend).
        `update_id`: the update that brought an edit (see `relay_variant`)."""
        facts = staff_message_facts(message)
        ignored = staff_relay_decision(
            facts, staff_chat_id=self.staff_chat_id, staff_ids=self.staff_ids, bot_id=self.bot.id
        )
        if ignored is not None:
            return ignored
        assert facts.thread_id is not None and self.staff_chat_id is not None
        topic = await self.handoffs.customer_of(self.staff_chat_id, facts.thread_id)
        if topic is None:
            return Ignore.NO_TOPIC
        handoff = await self.handoffs.open_for(topic.customer_chat_id)
        if handoff is None:
            await self._say_in_topic(
                facts.thread_id, "This handoff is closed; the customer did not get that. /reopen"
            )
            return Ignore.NO_TOPIC
        text = None
        if edited:
            language = Language(handoff.language)
            mark = say("staff_edited", language)
            text = EDIT_MARK + mark + (message.text or message.caption or "")
        relay = Relay(
            handoff_id=handoff.id,
            direction=Direction.TO_CUSTOMER,
            from_chat_id=message.chat_id,
            message_id=message.message_id,
            variant=relay_variant(edited, update_id),
            to_chat_id=topic.customer_chat_id,
            to_topic_id=None,
            text=text,
            received_at=self._clock(),
        )
        await self._relay(relay, handoff)
        return None

    async def _relay(self, relay: Relay, handoff: Handoff) -> None:
        """Record, copy, mark. A message recorded before (delivered again) is copied only if
        it was never marked."""
        await self.handoffs.record_relay(relay)
        await self._copy_once(relay, handoff)

    async def _copy_once(self, relay: Relay, handoff: Handoff) -> bool:
        """Copy a recorded relay unless it was copied already. One copy at a time per
        message in this process: on start the re-send of an unmarked row and Telegram's
        redelivery of the same update meet here, and the second finds the row marked."""
        key = (relay.from_chat_id, relay.message_id, relay.variant)
        lock = self._copying.setdefault(key, asyncio.Lock())
        try:
            async with lock:
                current = await self.handoffs.relay_of(*key)
                if current is None or current.copied_at or current.gave_up_at:
                    return False
                return await self._copy(current, handoff)
        finally:
            if not lock.locked() and self._copying.get(key) is lock:
                del self._copying[key]

    async def _copy(self, relay: Relay, handoff: Handoff) -> bool:
        """Make the copy a relay row asks for, then mark it. False when Telegram refused
        (left unmarked: the next start tries again)."""
        to_topic = relay.to_topic_id
        if relay.direction is Direction.TO_STAFF:
            if self.staff_chat_id is None:
                return False
            if handoff.topic_id is None:  # recorded without one (see `on_start`)
                handoff = await self._post_header(handoff, await self._run_of(handoff))
            if handoff.topic_id is None:
                return False  # never into General, where replies are not relayed back
            to_topic = handoff.topic_id
        to_chat = relay.to_chat_id
        if relay.direction is Direction.TO_STAFF:
            to_chat = self.staff_chat_id or 0
        for attempt in (1, 2):
            try:
                await self._send_copy(relay, to_chat, to_topic)
            except TelegramError as exc:
                if attempt == 1 and relay.direction is Direction.TO_STAFF and is_thread_gone(exc):
                    handoff = await self._post_header(handoff, await self._run_of(handoff))
                    to_topic = handoff.topic_id
                    continue
                if not gives_up(exc):  # Telegram unreachable: the next start tries again
                    log.info("human handoff: relay not copied yet: %s", exc)
                    return False
                log.warning("human handoff: relay given up: %s", exc)
                await self.handoffs.give_up(relay, self._clock(), str(exc))
                if relay.direction is Direction.TO_CUSTOMER:
                    why = "the customer blocked the bot" if isinstance(exc, Forbidden) else exc
                    await self._say_in_topic(
                        to_topic or handoff.topic_id, f"Not delivered to the customer: {why}."
                    )
                else:  # both sides learn it: staff what is missing, the customer to resend
                    await self._say_in_topic(
                        to_topic or handoff.topic_id,
                        f"A message from the customer could not be copied here: {exc}. "
                        "They were asked to send it again.",
                    )
                    await self._tell_customer(handoff, "relay_failed")
                return False
            copied_at = self._clock()
            await self.handoffs.mark_copied(relay, copied_at)
            if relay.direction is Direction.TO_CUSTOMER:
                await self._count_first_reply(handoff.id, copied_at)
            return True
        return False

    async def _count_first_reply(self, handoff_id: str, copied_at: datetime) -> None:
        """The time to the first staff reply, once per handoff: the mark just made is the
        handoff's first (`first_staff_reply_at` is set by the first mark only)."""
        marked = await self.handoffs.get(handoff_id)
        if marked is not None and marked.first_staff_reply_at == copied_at:
            seconds = (copied_at - marked.opened_at).total_seconds()
            metrics.FIRST_STAFF_REPLY.observe(max(0.0, seconds))

    async def _send_copy(self, relay: Relay, to_chat: int, to_topic: int | None) -> None:
        if relay.text is not None:
            for part, parse_mode in marked_parts(relay.text):
                await self.bot.send_message(
                    to_chat, part, message_thread_id=to_topic, parse_mode=parse_mode
                )
        else:
            await self.bot.copy_message(
                to_chat,
                relay.from_chat_id,
                relay.message_id,
                message_thread_id=to_topic,
                caption=relay.caption,
            )

    async def _tell_customer(self, handoff: Handoff, key: str) -> None:
        try:
            await self.bot.send_message(
                handoff.customer_chat_id, say(key, Language(handoff.language))
            )
        except TelegramError as exc:
            log.info("human handoff: customer not told (%s): %s", key, exc)

    async def _run_of(self, handoff: Handoff) -> Run | None:
        return await self.store.load_run(handoff.run_id) if handoff.run_id else None

    async def _say_in_topic(self, topic_id: int | None, text: str) -> None:
        if self.staff_chat_id is None or topic_id is None:
            return
        try:
            await self.bot.send_message(self.staff_chat_id, text, message_thread_id=topic_id)
        except TelegramError as exc:
            log.info("human handoff: note not posted in topic: %s", exc)

    # -- closing -----------------------------------------------------------------------

    def is_staff(self, user_id: int | None) -> bool:
        return user_id is not None and user_id in self.staff_ids

    async def close_topic(self, topic_id: int, by: int) -> Handoff | None:
        """/close in a customer's topic."""
        if self.staff_chat_id is None:
            return None
        topic = await self.handoffs.customer_of(self.staff_chat_id, topic_id)
        handoff = await self.handoffs.open_for(topic.customer_chat_id) if topic else None
        if handoff is None:
            await self._say_in_topic(topic_id, "No open handoff here.")
            return None
        return await self.close(handoff.id, by=by)

    async def close(self, handoff_id: str, *, by: int) -> Handoff | None:
        """Close a handoff once: the customer is told, the topic notes who closed it."""
        closed = await self.handoffs.close(handoff_id, by=by, at=self._clock())
        if closed is None:
            return None
        who = await self.name_of(by)
        if closed.run_id is not None:
            await self._note(closed.run_id, f"handoff {closed.id} closed by {who} ({by})")
        language = Language(closed.language)
        try:
            await self.bot.send_message(closed.customer_chat_id, say("handoff_closed", language))
        except TelegramError as exc:
            log.info("human handoff: customer not told of the close: %s", exc)
        await self._say_in_topic(
            closed.topic_id,
            f"Closed by {who}. The assistant answers this customer again; /reopen to hand over.",
        )
        if self.staff_chat_id is not None and closed.topic_id is not None:
            try:  # shown as closed in the group's topic list; reopened by the next handoff
                await self.bot.close_forum_topic(self.staff_chat_id, closed.topic_id)
            except TelegramError as exc:
                log.info("human handoff: topic not closed: %s", exc)
        return closed

    async def reopen(self, topic_id: int, by: int) -> Opened | None:
        """/reopen in a customer's topic: a new handoff for that customer."""
        if self.staff_chat_id is None:
            return None
        topic = await self.handoffs.customer_of(self.staff_chat_id, topic_id)
        if topic is None:
            await self._say_in_topic(topic_id, "This topic belongs to no customer.")
            return None
        last = await self._last_handoff(topic.customer_chat_id)
        if last is None:
            return None
        customer = Customer(
            topic.customer_chat_id,
            last.customer_user_id,
            last.customer_name,
            Language(last.language),
        )
        opened = await self.open(customer, Trigger.REOPEN, await self._run_of(last))
        if opened.new:
            try:
                await self.bot.send_message(
                    customer.chat_id, say("handoff_reopened", customer.language)
                )
            except TelegramError as exc:
                log.info("human handoff: customer not told of the reopen: %s", exc)
        else:
            await self._say_in_topic(topic_id, "This handoff is open already.")
        return opened

    async def _last_handoff(self, customer_chat_id: int) -> Handoff | None:
        rows = await self.handoffs.of_customer(customer_chat_id)
        return rows[-1] if rows else None


def staff_message_facts(message: Message) -> StaffMessage:
    sender = message.from_user
    return StaffMessage(
        chat_id=message.chat_id,
        thread_id=message.message_thread_id if message.is_topic_message else None,
        sender_id=sender.id if sender is not None else None,
        sender_is_bot=bool(sender is not None and sender.is_bot) or message.sender_chat is not None,
        is_service=_is_service(message),
        is_command=bool(message.text and message.text.startswith("/")),
    )


_CONTENT = (
    "text",
    "photo",
    "document",
    "voice",
    "audio",
    "video",
    "video_note",
    "animation",
    "sticker",
    "location",
    "contact",
    "venue",
    "poll",
    "dice",
)


def _is_service(message: Message) -> bool:
    """A service message ("topic created", "X joined", a pin): nothing anyone wrote."""
    return not any(getattr(message, name, None) for name in _CONTENT)


def relay_variant(edited: bool, update_id: int) -> int:
    """Which copy of a message a relay is: 0 for the message as sent, the `update_id` of
    the update that brought an edit.

    Not the edit's `edit_date`: Telegram dates are whole seconds, so two edits within one
    second had one key and the second (the final text) was taken for a redelivery of the
    first and never copied. Not a hash of the text either: editing back to an earlier
    text is a new edit staff must see. Telegram gives every update its own `update_id`
    and delivers the SAME id again when an update is redelivered (it was not acknowledged
    before a crash), which is exactly the key's job: one row per edit, found again on
    redelivery. Update ids are positive, so they never meet the original's 0."""
    if not edited:
        return 0
    if update_id <= 0:
        raise ValueError("an edit is relayed under the update_id that brought it")
    return update_id
