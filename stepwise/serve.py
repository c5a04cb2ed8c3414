"""`stepwise serve`: the Telegram bot (long polling or a webhook) with the staff console.

Also `bot_application`, the one place a runtime and the Telegram adapter are wired
together: the demo, the tests and the benchmarks build the bot through it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from telegram.error import BadRequest, Forbidden, InvalidToken, NetworkError

from bot import metrics
from bot.alerts import short_replica
from bot.application import (
    WEBHOOK_SECRET_RULE,
    BotConfig,
    Receiving,
    TelegramApplication,
    Webhook,
    bot_of,
    build_application,
    start_application,
    stop_application,
)
from bot.health import Health, HealthServer, add_webhook_routes, serve_health
from bot.inbox import new_owner
from bot.progress import DEFAULT_TYPING, Typing
from bot.ratelimit import CHAT_INTERVAL_S, PACING_MARGIN, SlidingWindowRateLimiter
from bot.recovery import keep_recovering
from bot.redact import redact_in_logs
from bot.shared_ratelimit import Budgets, SharedRateLimiter
from console.server import serve_staff_console
from stepwise.heap import settle_heap
from stepwise.logs import problem, set_replica
from stepwise.runtime import Runtime, open_runtime
from stepwise.settings import TOKEN_SHAPE, Settings, configured_staff_token
from stepwise.signals import stop_signals
from storage.store import is_postgres_url, open_inbox

log = logging.getLogger(__name__)

EXIT_OK, EXIT_USAGE, EXIT_UNAVAILABLE = 0, 2, 4
# Telegram unreachable at start (network down, a wrong TELEGRAM_API_BASE_URL): try again
# after each of these pauses, one line each, then give up with one line (exit 4). Bounded,
# so a service manager sees the failure and applies its own restart policy.
START_RETRY_DELAYS_S = (1.0, 2.0, 4.0)


@dataclass(frozen=True)
class ServeOptions:
    """The `serve` flags: how Telegram reaches the bot, where the staff console listens."""

    webhook_url: str | None = None
    webhook_secret: str | None = None
    listen: str = "127.0.0.1"
    port: int = 8443
    staff_port: int = 8080
    staff_listen: str = "127.0.0.1"
    # /healthz, /readyz, /metrics (bot.health): 0 = off.
    health_port: int = 0
    health_listen: str = "127.0.0.1"

    def webhook(self) -> Webhook | None:
        """The webhook to serve (with `webhook_secret`, or a generated secret); None for
        long polling. ValueError (one line, naming the flag) for a secret Telegram refuses."""
        if not self.webhook_url:
            return None
        if self.webhook_secret is None:
            return Webhook(self.webhook_url, self.listen, self.port)
        try:
            return Webhook(self.webhook_url, self.listen, self.port, self.webhook_secret)
        except ValueError:
            raise ValueError(
                f"--webhook-secret (STEPWISE_WEBHOOK_SECRET) must be {WEBHOOK_SECRET_RULE}"
            ) from None


def bot_application(
    runtime: Runtime,
    *,
    show_after_s: float = 0.5,
    typing: Typing = DEFAULT_TYPING,
    chat_interval_s: float = CHAT_INTERVAL_S,
) -> TelegramApplication:
    """The bot's PTB application on `runtime`, its progress messages attached to the agent.

    `chat_interval_s`: how far apart the messages to one chat are paced after a burst
    (Telegram's guidance, one a second; the tests' stand-in Telegram allows them faster and
    says so here, so that a conversation under test is not a second per message).
    """
    token = runtime.settings.token()
    if token is None:
        raise ValueError("TELEGRAM_BOT_TOKEN is not set")
    config = BotConfig(
        token=token,
        api_base_url=runtime.settings.telegram_api_base_url,
        staff_ids=runtime.settings.staff_ids,
        staff_chat_id=runtime.settings.staff_chat_id,
        console_url=runtime.settings.console_url,
    )
    application = build_application(
        runtime.agent,
        runtime.store,
        config,
        show_after_s=show_after_s,
        typing=typing,
        rate_limiter=rate_limiter_for(runtime.settings.db_path, token, chat_interval_s),
        linker=runtime.customers,
    )
    runtime.add_listener(bot_of(application).progress)
    # Metrics from the same committed transitions; tool labels from the catalog in use.
    metrics.TOOLS.declare(runtime.agent.executor.catalog)
    runtime.add_listener(metrics.RunMetrics())
    runtime.store.lease.keep_for_delivery = True  # a run's lease ends with its delivered mark
    hook_staff_alerts(runtime, application)
    return application


def hook_staff_alerts(runtime: Runtime, application: TelegramApplication) -> None:
    """Feed the staff alerts of the bot's own incidents (`bot.alerts`): the lease keeper's
    renewals and the rate limiter's 429s (the poller's losses: `start_application`; the
    backlog: `Health.backlog`, watched by `serve`)."""
    alerts = bot_of(application).staff_alerts
    alerts.replica = short_replica(runtime.store.lease.owner)
    if runtime.keeper is not None:
        runtime.keeper.on_renewal = alerts.renewal
    limiter = application.bot.rate_limiter
    if isinstance(limiter, SlidingWindowRateLimiter):
        limiter.on_flood = alerts.flooded


def rate_limiter_for(
    db: str, token: str, chat_interval_s: float = CHAT_INTERVAL_S
) -> SlidingWindowRateLimiter:
    """On PostgreSQL, the replicas of one bot share its Telegram budget (keyed by the bot's
    id); on SQLite (one process) the in-process limiter keeps it."""
    if not is_postgres_url(db):
        return SlidingWindowRateLimiter(max_retries=3, chat_interval=chat_interval_s)
    budgets = Budgets(chat_interval=chat_interval_s * (1 + PACING_MARGIN))
    return SharedRateLimiter(
        db, prefix=f"bot{token.partition(':')[0]}", budgets=budgets, max_retries=3
    )


async def open_receiving(runtime: Runtime) -> Receiving:
    """The durable inbox on the runtime's database, and this process's name in it."""
    settings = runtime.settings
    inbox = await open_inbox(settings.db_path, busy_timeout_s=settings.db_timeout_s)
    return Receiving(
        inbox,
        new_owner(),
        lease_s=settings.lease_s,
        keep_s=settings.inbox_keep.total_seconds(),
        chat_queue_max=settings.chat_queue_max,
    )


def start_recovery(runtime: Runtime, application: TelegramApplication, *, reoffer: bool) -> None:
    """Finish interrupted runs and deliver what never arrived, in the background: at start,
    then every half lease (`bot.recovery.keep_recovering`)."""
    work = keep_recovering(
        runtime.agent,
        runtime.store,
        bot_of(application).progress,
        approval_ttl=runtime.settings.approval_ttl,
        reoffer=reoffer,
        every_s=runtime.settings.lease_s / 2,
    )
    if runtime.keeper is not None:
        runtime.keeper.start_heartbeat()  # a long-lived process: others may look for it
    runtime.start_background(work)  # not PTB's create_task: stop() would wait for it forever
    # Human handoff: check the staff group (one line if wrong), re-send interrupted relays.
    application.create_task(bot_of(application).handoffs.handoff_start(application))


async def reach_telegram(
    application: TelegramApplication,
    base_url: str,
    token: str,
    *,
    delays: Sequence[float] = START_RETRY_DELAYS_S,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> bool:
    """Initialize the application (its first call to Telegram), retrying network errors
    after each of `delays`; one line on stderr per failure. False once it gave up."""
    attempts = len(delays) + 1
    for attempt in range(1, attempts + 1):
        try:
            await application.initialize()
            return True
        except BadRequest:
            raise
        except NetworkError as exc:  # connection refused, DNS, timeouts, 5xx
            reason = str(exc).replace(token, "[REDACTED]")
            if attempt == attempts:
                problem(
                    f"Telegram unreachable at {base_url} after {attempts} attempts"
                    f" ({reason}); giving up — check the network and TELEGRAM_API_BASE_URL"
                )
                return False
            delay = delays[attempt - 1]
            problem(
                f"cannot reach Telegram at {base_url} ({reason}); retrying in"
                f" {delay:g} s (attempt {attempt}/{attempts})",
                logging.WARNING,
            )
            await sleep(delay)
    return False


async def serve(settings: Settings, options: ServeOptions) -> int:
    """Run the bot until SIGINT/SIGTERM; returns the process exit code."""
    token = settings.token()
    if not token:
        problem("TELEGRAM_BOT_TOKEN is not set (create a bot with @BotFather)")
        return EXIT_USAGE
    if not TOKEN_SHAPE.match(token):
        problem("TELEGRAM_BOT_TOKEN is malformed (expected 123456:ABC...)")
        return EXIT_USAGE
    try:
        webhook = options.webhook()
    except ValueError as exc:
        problem(str(exc))
        return EXIT_USAGE
    if webhook is not None:
        redact_in_logs(webhook.secret)
    runtime = await open_runtime(settings)
    console = None
    health_server: HealthServer | None = None
    try:
        # The staff console (read-only, loopback by default) runs next to the bot, on its store.
        try:
            console = await serve_staff_console(
                runtime.store,
                configured_staff_token(settings),
                options.staff_listen,
                options.staff_port,
            )
        except (OSError, ValueError) as exc:
            problem(f"staff console: {exc}")
            return EXIT_USAGE
        if console is not None and runtime.settings.console_url is None:
            # Topic headers link each run to this console (STEPWISE_CONSOLE_URL, for a
            # public address, wins): a known console is never a bare run id.
            runtime.settings = runtime.settings.model_copy(update={"console_url": console.url})
        application = bot_application(runtime)
        set_replica(runtime.store.lease.owner)
        health = Health(application, runtime.store, backlog_max=settings.ready_backlog_max)
        runtime.start_background(health.loop.run())
        bot_of(application).readiness = health.ready_words  # /status in the staff group
        if options.health_port:
            try:
                health_server = await serve_health(
                    health, options.health_listen, options.health_port
                )
            except OSError as exc:
                problem(f"health port: {exc}")
                return EXIT_USAGE
            log.warning("health and metrics on %s (/healthz /readyz /metrics)", health_server.url)
        try:
            reached = await reach_telegram(application, settings.telegram_api_base_url, token)
        except InvalidToken:
            problem("Telegram rejected TELEGRAM_BOT_TOKEN")
            return EXIT_USAGE
        if not reached:
            return EXIT_UNAVAILABLE
        with stop_signals() as stop:
            try:
                await start_application(application, await open_receiving(runtime), webhook=webhook)
                # The webhook's port is public: health and metrics only where a setting
                # says so, never by default (`STEPWISE_HEALTH_ON_WEBHOOK`).
                on_webhook = webhook is not None and settings.health_on_webhook
                if on_webhook and add_webhook_routes(application, health):
                    log.warning("health and metrics on the webhook's port too")
                start_recovery(runtime, application, reoffer=True)
                runtime.start_background(bot_of(application).staff_alerts.watch(health.backlog))
                settle_heap()
                log.warning("stepwise bot @%s is running", application.bot.username)
                await stop.wait()
            finally:
                await runtime.stop_background()
                # Bounded (STEPWISE_SHUTDOWN_DEADLINE): a slow tool call never outlasts
                # the service manager's patience; what it left is resumed elsewhere.
                await stop_application(application, deadline_s=settings.shutdown_deadline_s)
                await application.shutdown()
    except Forbidden as exc:
        problem(f"Telegram refused the bot: {exc}")
        return EXIT_USAGE
    finally:
        if health_server is not None:
            await health_server.stop()
        if console is not None:
            await console.stop()
        await runtime.close()
    return EXIT_OK
