"""The python-telegram-bot application: built around an agent and its store, started and
stopped the same way by `stepwise serve`, the demo and the tests.

The Bot API is reached through `BotConfig.api_base_url`, so a local Bot API server (or the
stand-in used by tests and the demo) is used exactly like Telegram.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import tornado.web
from telegram import BotCommand, BotCommandScope, BotCommandScopeChat, Update
from telegram.error import BadRequest
from telegram.ext import (
    Application,
    ApplicationBuilder,
    CallbackQueryHandler,
    CommandHandler,
    MessageHandler,
    TypeHandler,
    filters,
)

from agent_core.agent import Agent
from agent_core.http import CustomerDirectory
from agent_core.models import Language
from bot.handlers import StepwiseBot
from bot.handoff import HandoffDesk
from bot.inbox import (
    DEFAULT_CHAT_QUEUE_MAX,
    DEFAULT_KEEP_S,
    DEFAULT_LEASE_S,
    Intake,
    Keeper,
    TrackingApplication,
)
from bot.polling import DEFAULT_POLL_TIMEOUT_S, Poller
from bot.progress import DEFAULT_TYPING, TelegramProgress, Typing
from bot.ratelimit import SlidingWindowRateLimiter
from bot.redact import redact_in_logs
from bot.shutdown import Left, finish_in_hand, give_up_claims
from bot.texts import say
from bot.webhook import WEBHOOK_PATH, check_webhook_posts
from storage.inbox.sqlite import Inbox
from storage.store import RunStore

log = logging.getLogger(__name__)

TelegramApplication = Application[Any, Any, Any, Any, Any, Any]

# Staff commands, offered only in each staff member's private chat (English: staff views
# are English whatever the customer's language).
STAFF_COMMANDS = (
    ("runs", "Staff: recent runs"),
    ("run", "Staff: one run's timeline"),
    ("stats", "Staff: runs and failures"),
)


@dataclass(frozen=True)
class CommandMenu:
    """One `setMyCommands` call: a list for a scope (None: default) and language."""

    commands: tuple[BotCommand, ...]
    scope: BotCommandScope | None = None
    language_code: str | None = None


def command_menus(staff_ids: frozenset[int], *, handoff: bool = False) -> list[CommandMenu]:
    """What each kind of user is offered: customers /help in their language (Chinese for
    `language_code` zh, English otherwise), and /human when a staff group takes handoffs
    (without one it would lead nowhere, like the Talk to a person button); staff also
    their commands, in the private-chat scope of each staff member only (Telegram picks
    the most specific scope)."""

    def customer(language: Language) -> tuple[BotCommand, ...]:
        offered = [BotCommand("help", say("command_help", language))]
        if handoff:
            offered.append(BotCommand("human", say("command_human", language)))
        return tuple(offered)

    menus = [CommandMenu(customer(Language.EN)), CommandMenu(customer(Language.ZH), None, "zh")]
    help_en = BotCommand("help", say("command_help", Language.EN))
    staff = (help_en, *(BotCommand(name, text) for name, text in STAFF_COMMANDS))
    menus += [CommandMenu(staff, BotCommandScopeChat(staff_id)) for staff_id in sorted(staff_ids)]
    return menus


# The update types the bot handles, and so the only ones it asks Telegram for (polling
# and webhook alike): channel posts, reactions, membership changes… are never delivered.
ALLOWED_UPDATES = [Update.MESSAGE, Update.EDITED_MESSAGE, Update.CALLBACK_QUERY]

# A person writing, not a channel: a channel's post that Telegram forwards into its
# discussion group, or a message sent on behalf of a chat, is nobody asking the bot.
PEOPLE = ~filters.SenderChat.ALL & ~filters.IS_AUTOMATIC_FORWARD
# Something a customer sent that is not text (a sticker, a photo, a voice note): answered
# "text only". Service messages ("X joined", a new title, a pin, a topic created) are not.
CUSTOMER_CONTENT = PEOPLE & ~filters.COMMAND & ~filters.StatusUpdate.ALL


@dataclass(frozen=True)
class BotConfig:
    """What the adapter needs from the settings, handed in by the composition root."""

    token: str
    api_base_url: str = "https://api.telegram.org/bot"
    staff_ids: frozenset[int] = frozenset()
    # Human handoff (issue 14): the staff forum group, and the console's URL for run links.
    staff_chat_id: int | None = None
    console_url: str | None = None


# Telegram's rule for `secret_token`; it sends the value back in every webhook POST.
WEBHOOK_SECRET_SHAPE = re.compile(r"[A-Za-z0-9_-]{1,256}")
WEBHOOK_SECRET_RULE = "1-256 characters of A-Z a-z 0-9 _ -"


def new_webhook_secret() -> str:
    """A secret for a webhook started without one: 43 characters of Telegram's alphabet."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Webhook:
    """Where Telegram posts updates (`stepwise serve --webhook-url`); None: long polling.

    There is always a secret: without one, anyone who finds the URL could post updates
    (press anyone's Confirm). Given ones are checked here, so a bad one stops the start
    with one line instead of failing later inside Telegram's setWebhook.
    """

    url: str
    listen: str = "127.0.0.1"
    port: int = 8443
    secret: str = field(default_factory=new_webhook_secret, repr=False)

    def __post_init__(self) -> None:
        if not WEBHOOK_SECRET_SHAPE.fullmatch(self.secret):
            raise ValueError(f"the webhook secret must be {WEBHOOK_SECRET_RULE}")


def build_application(
    agent: Agent,
    store: RunStore,
    config: BotConfig,
    *,
    show_after_s: float = 0.5,
    typing: Typing = DEFAULT_TYPING,
    rate_limiter: SlidingWindowRateLimiter,
    linker: CustomerDirectory | None = None,
) -> TelegramApplication:
    """The PTB application around `agent`. Production and tests share it.

    `rate_limiter`: how it keeps under Telegram's limits, the in-process
    `SlidingWindowRateLimiter` or the shared one (`bot.shared_ratelimit`) when several
    processes serve one bot (`stepwise.serve.rate_limiter_for` decides). `linker`: the
    tools file's `[customer]` lookup; with a `claim`, `/start <token>` links (`bot.link`).

    The progress listener (`bot_of(application).progress`) is not attached to the agent
    here: the caller that wired the agent attaches it.
    """
    redact_in_logs(config.token, config.token.partition(":")[2])
    base = config.api_base_url.rstrip("/")
    application = (
        ApplicationBuilder()
        .application_class(TrackingApplication)
        .update_queue(InboxQueue())
        .token(config.token)
        .base_url(base)
        .base_file_url(base.removesuffix("/bot") + "/file/bot")
        .concurrent_updates(True)
        .rate_limiter(rate_limiter)
        .build()
    )
    progress = TelegramProgress(
        application.bot,
        store,
        show_after_s=show_after_s,
        typing=typing,
        catalog=agent.executor.catalog,
    )
    desk = HandoffDesk(
        application.bot,
        store,
        staff_chat_id=config.staff_chat_id,
        staff_ids=config.staff_ids,
        console_url=config.console_url,
    )
    bot = StepwiseBot(
        agent, store, progress, staff_ids=config.staff_ids, handoff=desk, linker=linker
    )
    application.bot_data["stepwise"] = bot
    new = filters.UpdateType.MESSAGE  # commands and questions: new messages only
    # Group -1 runs before the handlers below, for every update: who wrote or pressed.
    application.add_handler(TypeHandler(Update, bot.customers.remember_sender), group=-1)
    if config.staff_chat_id is not None:
        # First: nothing in the staff group ever reaches the agent (staff replies to
        # customers, /close and /reopen in their topics, /status anywhere in it; the rest
        # is ignored).
        staff_group = filters.Chat(config.staff_chat_id)
        application.add_handler(
            CommandHandler("close", bot.handoffs.close_command, filters=new & staff_group)
        )
        application.add_handler(
            CommandHandler("reopen", bot.handoffs.reopen_command, filters=new & staff_group)
        )
        application.add_handler(
            CommandHandler("status", bot.staff.status_command, filters=new & staff_group)
        )
        application.add_handler(
            MessageHandler(staff_group & ~filters.COMMAND, bot.handoffs.staff_group)
        )
        application.add_handler(MessageHandler(staff_group, _ignore))
    application.add_handler(CommandHandler("human", bot.handoffs.human, filters=new & PEOPLE))
    application.add_handler(CommandHandler(["start", "help"], bot.customers.help, filters=new))
    application.add_handler(CommandHandler("runs", bot.staff.runs, filters=new))
    application.add_handler(CommandHandler("run", bot.staff.run_timeline, filters=new))
    application.add_handler(CommandHandler("stats", bot.staff.stats, filters=new))
    # Text, and any "/word" the command handlers above did not take (`bot.slash`): a
    # customer's "/cancel order P0002" is a request, and relayed during a handoff.
    application.add_handler(MessageHandler(new & PEOPLE & filters.TEXT, bot.customers.text))
    application.add_handler(
        MessageHandler(new & CUSTOMER_CONTENT & ~filters.TEXT, bot.customers.not_text)
    )
    application.add_handler(MessageHandler(filters.UpdateType.EDITED_MESSAGE, bot.customers.edited))
    application.add_handler(CallbackQueryHandler(bot.decisions.button))
    application.add_error_handler(bot.on_error)
    return application


async def _ignore(update: object, context: object) -> None:
    """Staff-group commands other than /close and /reopen: nothing (never the agent)."""


def bot_of(application: TelegramApplication) -> StepwiseBot:
    bot: StepwiseBot = application.bot_data["stepwise"]
    return bot


@dataclass(frozen=True)
class Receiving:
    """How updates are received: the durable inbox, this process's name in its claims and
    leases, and their timing (`bot.inbox`, `bot.polling`)."""

    inbox: Inbox
    owner: str
    lease_s: float = DEFAULT_LEASE_S
    keep_s: float = DEFAULT_KEEP_S
    chat_queue_max: int = DEFAULT_CHAT_QUEUE_MAX  # `bot.inbox`: the rest wait in the inbox


class InboxQueue(asyncio.Queue[object]):
    """The application's update queue, with the webhook's updates going to the inbox.

    PTB's webhook handler answers Telegram once `put` returns: an update is stored (and its
    processing started, `Intake.receive`) before the 200. If it cannot be stored the
    answer is 503, and Telegram delivers it again later. Anything else put here (PTB's stop
    signal) is queued as usual.
    """

    intake: Intake | None = None

    async def put(self, item: object) -> None:
        if self.intake is not None and isinstance(item, Update):
            if not await self.intake.receive([item]):
                raise tornado.web.HTTPError(503, reason="storage unavailable")
            return
        await super().put(item)


@dataclass
class _Receiver:
    intake: Intake
    tasks: list[asyncio.Task[None]]  # the inbox keeper, then the poller's (long polling)
    poller: Poller | None

    def working_runs(self) -> list[str]:
        """The runs the agent is working on (named when a shutdown leaves them)."""
        return bot_of(self.intake.application).agent.working.ids()


def receiver_of(application: TelegramApplication) -> _Receiver | None:
    receiver: _Receiver | None = application.bot_data.get("stepwise.receiver")
    return receiver


async def start_application(
    application: TelegramApplication,
    receiving: Receiving,
    *,
    webhook: Webhook | None = None,
    poll_timeout_s: int = DEFAULT_POLL_TIMEOUT_S,
) -> None:
    """Set the command menu, start, then receive updates through the inbox: the webhook,
    or long polling while this process holds the poller lease (`bot.polling`).

    `application` must be initialized; `stop_application` undoes whatever this started,
    and closes `receiving.inbox`.
    """
    await set_command_menus(application)
    await application.start()
    bot = bot_of(application)
    intake = Intake(
        receiving.inbox,
        application,
        bot.store,
        owner=receiving.owner,
        lease_s=receiving.lease_s,
        chat_queue_max=receiving.chat_queue_max,
    )
    keeper = Keeper(intake, keep_s=receiving.keep_s)
    tasks = [asyncio.ensure_future(keeper.run())]
    poller = None
    if webhook is not None:
        queue = application.update_queue
        assert isinstance(queue, InboxQueue)
        queue.intake = intake
        assert application.updater is not None
        await application.updater.start_webhook(
            listen=webhook.listen,
            port=webhook.port,
            url_path=WEBHOOK_PATH,
            webhook_url=webhook.url.rstrip("/") + "/" + WEBHOOK_PATH,
            secret_token=webhook.secret,
            allowed_updates=ALLOWED_UPDATES,
        )
        if not check_webhook_posts(application):
            log.warning("webhook: PTB's server has an unknown shape; its posts are unchecked")
    else:
        poller = Poller(
            application.bot,
            intake,
            list(ALLOWED_UPDATES),
            poll_timeout_s=poll_timeout_s,
            on_lost=bot.staff_alerts.poller_lost,
        )
        tasks.append(asyncio.ensure_future(poller.run()))
    application.bot_data["stepwise.receiver"] = _Receiver(intake, tasks, poller)


async def set_command_menus(application: TelegramApplication) -> None:
    """Set every command menu; a staff member's fails ("chat not found") until they have
    written to the bot once, which is logged and leaves the other menus in place."""
    bot = bot_of(application)
    handoff = bot.handoff is not None and bot.handoff.staff_chat_id is not None
    for menu in command_menus(bot.staff_ids, handoff=handoff):
        try:
            await application.bot.set_my_commands(
                list(menu.commands), scope=menu.scope, language_code=menu.language_code
            )
        except BadRequest as exc:
            if menu.scope is None:
                raise
            if "chat not found" in str(exc).lower():
                # Expected, not a fault: this staff member has not opened a private chat
                # with the bot yet (the demo's staff never do). The next start sets it.
                log.info("staff command menu waits for a first private message: %s", exc)
                continue
            log.warning("staff command menu not set (%s): %s", menu.scope.type, exc)


async def stop_application(
    application: TelegramApplication, *, deadline_s: float | None = None
) -> Left | None:
    """Stop receiving updates, let the ones in hand finish (for up to `deadline_s`, then
    stop them: `bot.shutdown`; None: however long they take), then stop the application
    and close the inbox. Returns what the deadline left unfinished, if anything."""
    receiver = receiver_of(application)
    left = None
    # Receiving first: the poller's lease is given up at once (a standby polls now).
    if receiver is not None and receiver.poller is not None:
        await _cancelled(receiver.tasks[1:])
        await receiver.poller.release()
    if application.updater is not None and application.updater.running:
        await application.updater.stop()
    if receiver is not None:
        if deadline_s is not None:
            left = await finish_in_hand(
                receiver.intake, application, deadline_s, runs=receiver.working_runs
            )
            if left is not None:
                bot_of(application).progress.quiet()
        await _cancelled(receiver.tasks[:1])  # the keeper: claims renewed until now
    if application.running:
        await application.stop()
    if receiver is not None:
        await receiver.intake.drain()
        if deadline_s is not None:
            await give_up_claims(receiver.intake)
        await receiver.intake.inbox.close()
        del application.bot_data["stepwise.receiver"]
    return left


async def _cancelled(tasks: Sequence[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
