"""`stepwise demo`: the real bot, in a browser, without a Telegram token.

One process runs four things on loopback:

* the local Bot API stand-in (`standin.StandIn`), playing Telegram;
* the real bot, built by `bot_application` and long-polling the stand-in through
  `TELEGRAM_API_BASE_URL` — the production code path, HTTP included;
* a chat page (`standin.webchat`) where the demo customer types and presses the real
  inline buttons (they become real callback queries), beside the staff group (a forum
  with one topic per handed-off customer) where the demo staff member replies;
* the staff console, on the bot's own run store, to see what the agent did.

Ctrl-C (or SIGTERM) stops them in reverse order, letting the bot finish what it is doing.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from decimal import Decimal

from pydantic import SecretStr

from bot.application import start_application, stop_application
from console.auth import new_staff_token
from console.server import ConsoleServer, serve_console
from standin import DEFAULT_TOKEN, StandIn
from standin.webchat import StaffDesk, WebChat, prepare_staff_group
from stepwise.logs import problem
from stepwise.output import say
from stepwise.runtime import Runtime, open_runtime
from stepwise.serve import bot_application, open_receiving, start_recovery
from stepwise.settings import Settings, configured_staff_token
from stepwise.signals import stop_signals

log = logging.getLogger(__name__)

EXIT_OK, EXIT_USAGE = 0, 2
HOST = "127.0.0.1"  # the demo has no authentication on its chat page: loopback only
# The demo shop answers this slowly unless STEPWISE_SHOP_LATENCY_MS says otherwise, so each
# step's message is seen working (⏳) and then edited in place to its outcome.
DEMO_SHOP_LATENCY_MS = 700
# The demo's staff group (a forum supergroup the bot administers) and its one staff member.
DEMO_STAFF = StaffDesk(chat_id=-1001000000042, user_id=10002, first_name="Sam (staff)")
DEMO_APPROVAL_ABOVE = Decimal("50")


class Demo:
    """Everything `stepwise demo` runs, startable and stoppable from tests (ports 0 work)."""

    def __init__(
        self,
        settings: Settings,
        *,
        chat_port: int = 8090,
        staff_port: int = 8080,
        bot_api_port: int = 0,
        staff_token: str | None = None,
        poll_timeout_s: int = 10,
    ) -> None:
        self.settings = settings
        self.chat_port = chat_port
        self.staff_port = staff_port
        self.bot_api_port = bot_api_port
        explicit = staff_token or configured_staff_token(settings)
        self.staff_token = explicit or new_staff_token()
        self.token_generated = not explicit
        self.poll_timeout_s = poll_timeout_s
        self.standin = StandIn(
            DEFAULT_TOKEN, bot_first_name="Stepwise", bot_username="stepwise_bot"
        )
        self.runtime: Runtime | None = None
        self.console: ConsoleServer | None = None
        self.chat: WebChat | None = None
        self._stack = AsyncExitStack()

    @property
    def chat_url(self) -> str:
        assert self.chat is not None, "start() first"
        return self.chat.url

    @property
    def console_url(self) -> str:
        assert self.console is not None, "start() first"
        return self.console.url + "/"

    async def start(self) -> None:
        """Start everything, or nothing: a failure stops what had started, then re-raises."""
        try:
            await self._start()
        except BaseException:
            await self.stop()
            raise

    async def _start(self) -> None:
        stack = self._stack
        await self.standin.start(HOST, self.bot_api_port)
        stack.push_async_callback(self.standin.stop)
        prepare_staff_group(self.standin, DEMO_STAFF)  # before the bot checks it at start

        latency = self.settings.shop_latency_ms
        if "shop_latency_ms" not in self.settings.model_fields_set:
            latency = DEMO_SHOP_LATENCY_MS
        settings = self.settings.model_copy(
            update={
                "telegram_bot_token": SecretStr(self.standin.token),
                "telegram_api_base_url": self.standin.base_url,
                "shop_latency_ms": latency,
                "staff_ids": self.settings.staff_ids | {DEMO_STAFF.user_id},
                "staff_chat_id": DEMO_STAFF.chat_id,  # human handoff into the staff panel
                # Refunds above this wait for the staff panel's Approve/Reject (issue 14):
                # "refund 59 for A1002" shows it; smaller ones stay the customer's to confirm.
                "staff_approval_above": self.settings.staff_approval_above or DEMO_APPROVAL_ABOVE,
            }
        )
        runtime = await open_runtime(settings)
        self.runtime = runtime
        stack.push_async_callback(runtime.close)

        self.console = await serve_console(runtime.store, self.staff_token, HOST, self.staff_port)
        stack.push_async_callback(self.console.stop)

        # Topic headers link to the run in this console (its port is known only now).
        runtime.settings = runtime.settings.model_copy(update={"console_url": self.console_url})
        application = bot_application(runtime)
        await application.initialize()
        stack.push_async_callback(application.shutdown)
        stack.push_async_callback(stop_application, application)
        receiving = await open_receiving(runtime)
        await start_application(application, receiving, poll_timeout_s=self.poll_timeout_s)
        # Finish runs an earlier crash interrupted, as `stepwise serve` does on start.
        start_recovery(runtime, application, reoffer=False)

        self.chat = WebChat(
            self.standin,
            user_id=settings.demo_user_id,
            console_url=self.console_url,
            staff=DEMO_STAFF,
        )
        await self.chat.start(HOST, self.chat_port)
        stack.push_async_callback(self.chat.stop)

    async def stop(self) -> None:
        """Stop in reverse order: chat page, bot (finishing its work), console, store, API."""
        await self._stack.aclose()


async def run_demo(
    settings: Settings,
    *,
    chat_port: int = 8090,
    staff_port: int = 8080,
    bot_api_port: int = 0,
    staff_token: str | None = None,
) -> int:
    """Run the browser demo until SIGINT/SIGTERM; returns the process exit code."""
    demo = Demo(
        settings,
        chat_port=chat_port,
        staff_port=staff_port,
        bot_api_port=bot_api_port,
        staff_token=staff_token,
    )
    try:
        await demo.start()
    except OSError as exc:
        problem(
            f"cannot listen on {HOST} ({exc.strerror or exc}); choose other ports"
            " with --chat-port / --staff-port"
        )
        return EXIT_USAGE
    except ValueError as exc:  # a weak STEPWISE_STAFF_TOKEN
        problem(str(exc))
        return EXIT_USAGE
    token_note = "generated for this run" if demo.token_generated else "from STEPWISE_STAFF_TOKEN"
    with stop_signals() as stopped:
        try:
            say(
                "stepwise demo — the real bot, with a local stand-in for Telegram.\n"
                f"  Chat with the bot:  {demo.chat_url}\n"
                f"  Staff console:      {demo.console_url}\n"
                f"  Staff token:        {demo.staff_token}  ({token_note})\n"
                "Press Ctrl-C to stop."
            )
            await stopped.wait()
        finally:
            # The reader may be gone (`| tee` killed by the same Ctrl-C): say never raises,
            # so the stop below always runs and the ports are freed.
            say("stepwise demo: stopping…")
            await demo.stop()
    return EXIT_OK
