"""What the customer sees while a run moves: the plan, one message per step, the answer.

An executor listener. Each step gets one message, edited in place as the step changes.
A step that finishes quickly is shown once, in its final state; a step still running after
`show_after_s` (or one that retries, or pauses) is shown at once and then edited — so the
chat stays readable and the bot stays far below Telegram's flood limits.

Nothing here may break a run: Telegram errors are logged, "message is not modified" is
ignored, and a customer who blocked the bot is noted on the run and left alone.

Delivered marks (issue 15 #4): what reached the customer is recorded on the run as an
event, so a restart (or another process) knows what was committed but never delivered:
`plan_shown` for the plan, `prompt_shown` for a pause's Confirm/Cancel prompt (with the
message it is bound to), `answer_delivered` for the final answer, a clarifying question
(with its option buttons) included. The lease the run kept for the delivery is given back
by the prompt's and the answer's marks (`storage.leases`); a crash before the mark leaves
it to lapse, and `bot.recovery` sends the prompt (`reoffer`) or answer (`redeliver`)
again, once.

The one exception: a send that times out on our side (PTB's read timeout) may still have
reached Telegram. It counts as not delivered, so the answer is sent again (a retry here,
or a redelivery after a crash) and the customer can see it twice. Telegram's Bot API has no
idempotency key for `sendMessage`, so this cannot be told apart from a lost send.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol

from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, Message
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TelegramError

from agent_core.answers.compose import Catalog, decision_labels, plan_text, step_progress
from agent_core.catalog.builtin import CATALOG
from agent_core.models import EventKind, PromptRef, Run, RunEvent, RunStatus, StepStatus
from bot.callbacks import choice_data, decision_data
from bot.texts import say
from bot.textsplit import clip_message, split_message
from storage.records import delivered_note

log = logging.getLogger(__name__)

ANSWER_DELIVERY_ATTEMPTS = 4
# Messages of the events written on a run's history (staff see them in /run). On start the
# bot looks for `prompt_shown` and `customer_blocked` events, never for these texts.
BLOCKED_NOTE = "telegram: the customer blocked the bot"
PROMPT_SHOWN_NOTE = "telegram: confirmation buttons shown"
PLAN_SHOWN_NOTE = "telegram: plan shown"


def _rows(*markups: InlineKeyboardMarkup | None) -> InlineKeyboardMarkup | None:
    rows = [row for markup in markups if markup is not None for row in markup.inline_keyboard]
    return InlineKeyboardMarkup(rows) if rows else None


def decision_text(run: Run, step_id: str, key: str) -> str:
    """The paused step's message once a button was pressed: its goal and what happened."""
    step = run.step(step_id)
    # A neutral mark until the step has run: a confirmed change is not done yet.
    icon = "⏳" if key in ("you_confirmed", "team_approved_step") else "🚫"
    return html.escape(f"{icon} {step.goal} — {say(key, run.language)}")


def clarify_buttons(run: Run) -> InlineKeyboardMarkup | None:
    """One button per option of the run's clarifying question, carrying its nonce."""
    clarify = run.clarify
    if run.status is not RunStatus.NEEDS_CLARIFICATION or clarify is None or not clarify.nonce:
        return None
    if not clarify.options:
        return None
    return InlineKeyboardMarkup(
        [
            [
                InlineKeyboardButton(
                    option.label, callback_data=choice_data(run.id, clarify.nonce, n)
                )
            ]
            for n, option in enumerate(clarify.options)
        ]
    )


@dataclass(frozen=True)
class Typing:
    """When a working step shows "typing…": after `after_s`, then every `every_s` (Telegram
    shows the action for about five seconds, or until the bot's next message)."""

    after_s: float = 1.0
    every_s: float = 4.0


DEFAULT_TYPING = Typing()


@dataclass
class _StepView:
    message_id: int | None = None
    shown_text: str | None = None
    timer: asyncio.Task[None] | None = None
    typing: asyncio.Task[None] | None = None

    def stop_typing(self) -> None:
        if self.typing is not None and self.typing is not asyncio.current_task():
            self.typing.cancel()
        self.typing = None


# The forum topic (`message_thread_id`) the customer wrote in, for the task that asks or
# resumes a run: the executor calls its listeners in that task, so the run's plan, steps,
# prompt and answer all go to that topic (None: no topic, or General).
TOPIC: ContextVar[int | None] = ContextVar("stepwise_topic", default=None)
# A line the bot adds at the end of the answer of the run this task drives (a staff
# Reject's reason): said inside the answer, so the customer gets one message, not two.
ANSWER_NOTE: ContextVar[str | None] = ContextVar("stepwise_answer_note", default=None)


@dataclass
class _RunView:
    chat_id: int
    thread_id: int | None = None
    steps: dict[str, _StepView] = field(default_factory=dict)
    # Telegram calls of one run go out one at a time, so messages arrive in plan order.
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    blocked: bool = False


class ProgressStore(Protocol):
    """What progress writes on a run (`storage.runs.sqlite.SqliteRunStore`): facts learnt after
    a transition, the run's state untouched."""

    async def add_event(self, run_id: str, kind: EventKind, message: str | None = None) -> None:
        """A fact on the run (the customer blocked the bot)."""

    async def bind_prompt(
        self, run_id: str, nonce: str, prompt: PromptRef, message: str | None = None
    ) -> None:
        """The pause's prompt was delivered as `prompt` (also records `prompt_shown`)."""

    async def bind_choices(self, run_id: str, nonce: str, prompt: PromptRef) -> None:
        """A clarifying question's options were delivered as `prompt`."""


# Set by the bot (issue 14's handoff): called with a finished run before its answer is sent;
# returns a text to send instead of the run's answer (None: the answer) and buttons to show
# under it (None: none). The handoff opens there, so its reply replaces the agent's.
AnswerHook = Callable[[Run], Awaitable[tuple[str | None, InlineKeyboardMarkup | None]]]
# Set by the bot (issue 14's staff approval): delivers a staff pause's Approve/Reject to
# staff (and binds the pause to that message); True once shown. The customer's step message
# then says they are waiting for our team, without buttons.
StaffPromptHook = Callable[[Run], Awaitable[bool]]


class TelegramProgress:
    answer_hook: AnswerHook | None = None
    staff_prompt_hook: StaffPromptHook | None = None

    def __init__(
        self,
        bot: Bot,
        store: ProgressStore,
        *,
        show_after_s: float = 0.5,
        typing: Typing = DEFAULT_TYPING,
        catalog: Catalog = CATALOG,
    ) -> None:
        self._bot = bot
        # The catalog in use: the buttons' words come from it, as the prompt's sentence
        # naming them does (`agent_core.answers.compose.decision_labels`, one source).
        self._catalog = catalog
        self._store = store
        self._show_after_s = show_after_s
        self._typing = typing
        self._views: dict[str, _RunView] = {}
        # Runs whose prompt is being delivered by this process and not yet bound to its
        # message: a press on it waits for the binding instead of finding none (stale).
        self._binding: dict[str, asyncio.Event] = {}
        # Staff pauses whose "waiting for our team" message this process showed: (step,
        # message, topic) by run, so the decision edits that message in place
        # (`waiting_message`). Not stored: after a restart the decision shows anew.
        self._waiting: dict[str, tuple[str, int, int | None]] = {}

    def adopt(self, run: Run, step_id: str, message_id: int, thread_id: int | None = None) -> None:
        """Continue a run whose paused step's message already exists (a button press)."""
        view = self._views.setdefault(run.id, _RunView(run.chat_id, thread_id))
        view.steps[step_id] = _StepView(message_id=message_id)

    def waiting_message(self, run_id: str) -> tuple[str, int, int | None] | None:
        """The customer's "waiting for our team" message of a staff pause (step id,
        message id, topic), once: the caller edits it to the decision and adopts it."""
        return self._waiting.pop(run_id, None)

    def quiet(self) -> None:
        """Stop every pending "typing…" and delayed message (a shutdown stopped the runs
        they were for: nothing else would)."""
        for view in self._views.values():
            for step in view.steps.values():
                step.stop_typing()
                if step.timer is not None:
                    step.timer.cancel()

    @property
    def open_views(self) -> int:
        return len(self._views)

    async def prompt_settled(self, run_id: str, within_s: float = 5.0) -> None:
        """Return once a prompt this process is delivering for `run_id` is bound to its
        message (at once when there is none): a press can arrive between Telegram
        showing the buttons and the binding's commit."""
        binding = self._binding.get(run_id)
        if binding is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(binding.wait(), within_s)

    async def __call__(self, run: Run, event: RunEvent) -> None:
        kind = event.kind
        if kind is EventKind.RUN_FINISHED and run.status is RunStatus.EXPIRED:
            return  # the button handler answers an expired pause on its own message
        view = self._views.get(run.id)
        if view is None:
            view = self._views[run.id] = _RunView(run.chat_id, TOPIC.get())
        if kind is EventKind.RUN_PLANNED:
            await self._plan(run, view)
        elif kind is EventKind.STEP_STARTED and event.step_id:
            # Shown only if it is still running a moment later; fast steps appear once, done.
            step_view = view.steps.setdefault(event.step_id, _StepView())
            if step_view.timer is None:
                step_view.timer = asyncio.create_task(self._show_later(run, view, event.step_id))
            step_view.stop_typing()
            step_view.typing = asyncio.create_task(self._type_while_working(run, view))
        elif kind in (EventKind.DECISION_CLAIMED, EventKind.STEP_APPROVED):
            return  # the button handler already showed the decision on the message
        elif kind is EventKind.RUN_FINISHED:
            await self._finish(run, view)
        elif event.step_id:
            view.steps.setdefault(event.step_id, _StepView()).stop_typing()
            await self._show(run, view, event.step_id)
            if kind is EventKind.STEP_PAUSED:
                self._drop(run.id)  # a paused run lives in the database, not here

    async def _plan(self, run: Run, view: _RunView) -> None:
        """Show the plan (a run with steps) and mark it shown."""
        if run.steps:
            plan = clip_message(html.escape(plan_text(run)))
            if await self._send_text(run, view, plan, silent=True) is not None:
                await self._write_event(run, EventKind.PLAN_SHOWN, PLAN_SHOWN_NOTE)

    async def show_plan(self, run: Run) -> None:
        """Show the plan of a run recovered after a crash that kept it from the customer;
        the run's next messages follow it (same view)."""
        view = self._views.get(run.id)
        if view is None:
            view = self._views[run.id] = _RunView(run.chat_id)
        await self._plan(run, view)

    async def _show_later(self, run: Run, view: _RunView, step_id: str) -> None:
        await asyncio.sleep(self._show_after_s)
        step_view = view.steps[step_id]
        step_view.timer = None
        await self._show(run, view, step_id)

    async def _type_while_working(self, run: Run, view: _RunView) -> None:
        """ "typing…" while a step works longer than `Typing.after_s` (cancelled when the
        step's next event arrives)."""
        await asyncio.sleep(self._typing.after_s)
        while not view.blocked:
            action = self._bot.send_chat_action(
                view.chat_id, ChatAction.TYPING, message_thread_id=view.thread_id
            )
            await self._call(run, view, action, quiet=True)
            await asyncio.sleep(self._typing.every_s)

    async def _show(self, run: Run, view: _RunView, step_id: str) -> None:
        step_view = view.steps.setdefault(step_id, _StepView())
        timer, step_view.timer = step_view.timer, None
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()
        step = run.step(step_id)
        text = html.escape(step_progress(step, run))
        markup = None
        waiting = step.status is StepStatus.PAUSED and step.approval is None and run.pause
        if waiting and run.pause is not None and run.pause.approver == "staff":
            text = clip_message(text + "\n\n" + html.escape(say("waiting_for_team", run.language)))
            await self._deliver(run, view, step_view, text, None, ANSWER_DELIVERY_ATTEMPTS)
            if step_view.message_id is not None:
                self._waiting[run.id] = (step_id, step_view.message_id, view.thread_id)
            if self.staff_prompt_hook is not None:
                await self.staff_prompt_hook(run)
            return
        if step.status is StepStatus.PAUSED and step.approval is None and run.pause:
            text += "\n\n" + html.escape(run.answer or "")
            markup = self._buttons(run)
        text = clip_message(text)
        # Without its buttons a paused run can never go on: deliver them like an answer.
        attempts = ANSWER_DELIVERY_ATTEMPTS if markup is not None else 1
        if markup is None:
            await self._deliver(run, view, step_view, text, None, attempts)
            return
        binding = self._binding.setdefault(run.id, asyncio.Event())
        try:
            if await self._deliver(run, view, step_view, text, markup, attempts):
                await self._bind(run, view.chat_id, step_view.message_id)
        finally:
            binding.set()
            if self._binding.get(run.id) is binding:
                del self._binding[run.id]

    async def _deliver(
        self,
        run: Run,
        view: _RunView,
        step_view: _StepView,
        text: str,
        markup: InlineKeyboardMarkup | None,
        attempts: int,
    ) -> bool:
        """Send or edit the step's message; True once it shows `text` (and `markup`)."""
        async with view.lock:
            if text == step_view.shown_text and markup is None:
                return False
            for attempt in range(1, attempts + 1):
                if step_view.message_id is None:
                    result = await self._call(
                        run, view, self._send(view, text, markup, silent=markup is None)
                    )
                    if isinstance(result, Message):
                        step_view.message_id = result.message_id
                else:
                    result = await self._call(
                        run,
                        view,
                        self._bot.edit_message_text(
                            text,
                            chat_id=view.chat_id,
                            message_id=step_view.message_id,
                            parse_mode=ParseMode.HTML,
                            reply_markup=markup,
                        ),
                    )
                if result is not None or view.blocked:
                    break
                if attempt < attempts:
                    await asyncio.sleep(0.5 * 2 ** (attempt - 1))
            if result is None:
                return False  # not shown: a later state of the step (or _finish) tries again
            step_view.shown_text = text
            return True

    async def _bind(self, run: Run, chat_id: int, message_id: int | None) -> None:
        """Record that the prompt reached the customer, on which message (see `reoffer`)."""
        if run.pause is None or run.pause.nonce is None or message_id is None:
            return
        prompt = PromptRef(chat_id=chat_id, message_id=message_id)
        try:
            await self._store.bind_prompt(run.id, run.pause.nonce, prompt, PROMPT_SHOWN_NOTE)
        except Exception:
            log.exception("could not record the prompt", extra={"trace_id": run.trace_id})

    async def _bind_choices(self, run: Run, sent: Message) -> None:
        """Record the message that shows the question's options: a press counts only there,
        so their data replayed in another chat or onto another message uses nothing up."""
        if run.clarify is None or not run.clarify.nonce:
            return
        prompt = PromptRef(chat_id=sent.chat_id, message_id=sent.message_id)
        try:
            await self._store.bind_choices(run.id, run.clarify.nonce, prompt)
        except Exception:
            # Unbound, a press still counts only in the question's chat.
            log.exception("could not record the options", extra={"trace_id": run.trace_id})

    async def reoffer(self, run: Run) -> bool:
        """Show a paused run's confirmation prompt again, as a new message.

        For prompts that never arrived: the bot was killed between recording the pause and
        sending its buttons, or Telegram failed every attempt. True once it was shown.
        """
        if run.status is not RunStatus.PAUSED or run.pause is None or run.pause.nonce is None:
            return False
        view = _RunView(chat_id=run.chat_id)
        await self._show(run, view, run.pause.step_id)
        return view.steps[run.pause.step_id].shown_text is not None

    def _buttons(self, run: Run) -> InlineKeyboardMarkup:
        assert run.pause is not None and run.pause.nonce is not None
        nonce = run.pause.nonce
        yes, no = decision_labels(run, self._catalog) or ("", "")
        return InlineKeyboardMarkup(
            [
                [
                    InlineKeyboardButton(
                        yes, callback_data=decision_data(run.id, nonce, approved=True)
                    ),
                    InlineKeyboardButton(
                        no, callback_data=decision_data(run.id, nonce, approved=False)
                    ),
                ]
            ]
        )

    async def _finish(self, run: Run, view: _RunView) -> None:
        """Settle every step message, then deliver the answer (retrying transient errors)."""
        for step in run.steps:
            step_view = view.steps.get(step.id)
            if step_view is not None and (step_view.timer or step_view.message_id):
                await self._show(run, view, step.id)
        self._drop(run.id)
        await self._answer(run, view)

    async def _answer(self, run: Run, view: _RunView) -> bool:
        """Send the run's answer (every part, retrying transient errors) and mark it
        delivered once all of it went through; True then."""
        answer, extra = run.answer or "", None
        if self.answer_hook is not None:
            try:
                replaced, extra = await self.answer_hook(run)
            except Exception:
                log.exception("answer hook failed", extra={"trace_id": run.trace_id})
                replaced = None
            answer = answer if replaced is None else replaced
        note = ANSWER_NOTE.get()
        if note:
            answer = f"{answer}\n{note}" if answer else note
        parts = split_message(html.escape(answer))
        for number, part in enumerate(parts, start=1):
            # A clarifying question offers its options as buttons under its last part.
            choices = clarify_buttons(run) if number == len(parts) else None
            markup = _rows(choices, extra) if number == len(parts) else None
            sent = await self._send_text(
                run, view, part, silent=False, attempts=ANSWER_DELIVERY_ATTEMPTS, markup=markup
            )
            if sent is None:
                return False  # blocked (noted) or failed: the lease lapses, recovery resends
            if choices is not None:
                await self._bind_choices(run, sent)
        # With the text as sent (a handoff's reply replaces the run's answer): the console
        # shows what the customer saw from here, never a re-rendering.
        await self._write_event(run, EventKind.ANSWER_DELIVERED, delivered_note(answer))
        return True

    async def redeliver(self, run: Run) -> bool:
        """Send a finished run's answer that never reached the customer (the bot died
        between committing the run's end and sending it), as new messages; True once it
        was delivered (and marked). A run that has not ended is left alone.

        Without the topic the customer wrote in (not stored): a forum's answer goes to
        General.
        """
        if run.status in (RunStatus.RUNNING, RunStatus.PAUSED):
            return False
        return await self._answer(run, _RunView(chat_id=run.chat_id))

    async def _send_text(
        self,
        run: Run,
        view: _RunView,
        text: str,
        *,
        silent: bool,
        attempts: int = 1,
        markup: InlineKeyboardMarkup | None = None,
    ) -> Message | None:
        """Send `text` (HTML) as a new message of the run; the message once it was sent."""
        async with view.lock:
            for attempt in range(1, attempts + 1):
                send = self._send(view, text, markup, silent=silent)
                sent = await self._call(run, view, send, quiet=True)
                if isinstance(sent, Message):
                    return sent
                if view.blocked:
                    return None
                if attempt < attempts:
                    await asyncio.sleep(0.5 * 2 ** (attempt - 1))
            log.error("could not deliver a message", extra={"trace_id": run.trace_id})
            return None

    def _send(
        self, view: _RunView, text: str, markup: InlineKeyboardMarkup | None, *, silent: bool
    ) -> Awaitable[Message]:
        """A new message. `silent` ones (the plan, a step's progress) make no sound: a
        question buzzes the phone only for what needs the customer (the prompt, the answer)."""
        return self._bot.send_message(
            view.chat_id,
            text,
            parse_mode=ParseMode.HTML,
            reply_markup=markup,
            message_thread_id=view.thread_id,
            disable_notification=silent,
        )

    async def _call(
        self, run: Run, view: _RunView, call: Awaitable[Message | bool], *, quiet: bool = False
    ) -> Message | bool | None:
        """Make one Bot API call; never raise into the executor. None when it failed."""
        if view.blocked:
            if asyncio.iscoroutine(call):
                call.close()
            return None
        try:
            result = await call
        except Forbidden:
            view.blocked = True
            log.warning("customer blocked the bot", extra={"trace_id": run.trace_id})
            await self._write_event(run, EventKind.CUSTOMER_BLOCKED, BLOCKED_NOTE)
            return None
        except BadRequest as exc:
            if "message is not modified" in str(exc).lower():
                return True  # it already shows exactly this
            log.warning("telegram refused a call: %s", exc, extra={"trace_id": run.trace_id})
            return None
        except (NetworkError, RetryAfter) as exc:
            if not quiet:
                log.warning("telegram unavailable: %s", exc, extra={"trace_id": run.trace_id})
            return None
        except TelegramError as exc:
            log.warning("telegram error: %s", exc, extra={"trace_id": run.trace_id})
            return None
        return result

    async def _write_event(self, run: Run, kind: EventKind, message: str) -> None:
        try:
            await self._store.add_event(run.id, kind, message)
        except Exception:
            log.exception("could not note %r on the run", message, extra={"trace_id": run.trace_id})

    def _drop(self, run_id: str) -> None:
        view = self._views.pop(run_id, None)
        if view is None:
            return
        for step_view in view.steps.values():
            step_view.stop_typing()
            if step_view.timer is not None and step_view.timer is not asyncio.current_task():
                step_view.timer.cancel()
