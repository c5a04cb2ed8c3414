"""Settings in, a ready `Agent` out: storage, the tools and the executor, wired once.

The CLI, the Telegram bot and the demo all start here, so they share one executor
configuration and one database: `STEPWISE_DB` is a SQLite file or a `postgresql://` URL,
and `storage.store` opens the backend it names.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from agent_core.agent import Agent
from agent_core.catalog.builtin import CATALOG, ToolSpec
from agent_core.execution.approval import StaffRule
from agent_core.execution.executor import Executor, Listener
from agent_core.execution.policy import FailurePolicy
from agent_core.execution.tools import Tool, ToolRegistry
from agent_core.http import (
    CustomerDirectory,
    build_http_tools,
    customer_directory,
    load_tools_config,
    new_client,
)
from agent_core.models import Run, RunEvent, utcnow
from agent_core.understanding.planner import Planner, RuleBasedPlanner
from agent_core.understanding.recognition.embedding import SemanticIndex
from agent_core.understanding.recognition.intents import IntentDef
from agent_core.understanding.recognition.intents import load as load_intents
from bot.redact import redact_in_logs
from stepwise.settings import Settings
from stepwise.shop_log import log_shop_failures
from storage.inbox.sqlite import new_run_id
from storage.leases import Lease, LeaseKeeper, process_owner
from storage.shop.tools import shop_tools
from storage.store import DemoShop, RunStore, open_shop, open_store

if TYPE_CHECKING:  # httpx: only where a client is made (agent_core.http.client)
    import httpx

log = logging.getLogger(__name__)


class Listeners:
    """The executor's one listener, forwarding to every listener added so far.

    The bot's progress listener needs the Telegram application, which is built after the
    runtime is open; this lets it be attached later without reaching into the executor.
    Like the executor, it never lets one listener's failure stop the others.
    """

    def __init__(self, listeners: Sequence[Listener] = ()) -> None:
        self._listeners = list(listeners)

    def add(self, listener: Listener) -> None:
        self._listeners.append(listener)

    async def __call__(self, run: Run, event: RunEvent) -> None:
        for listener in self._listeners:
            try:
                await listener(run, event)
            except Exception:
                log.exception(
                    "listener failed on %s", event.kind.value, extra={"trace_id": run.trace_id}
                )


@dataclass
class Runtime:
    settings: Settings
    agent: Agent
    store: RunStore
    shop: DemoShop | None  # the demo shop, unless STEPWISE_TOOLS points at an HTTP API
    http: httpx.AsyncClient | None = None
    listeners: Listeners = field(default_factory=Listeners)
    # Renews the leases of the runs this process works on (storage/leases.py).
    keeper: LeaseKeeper | None = None
    # The tools file's `[customer]` lookup (its cache shared with the tools), for the bot's
    # `/start <token>` (`bot.link`); None for the demo shop or a file without one.
    customers: CustomerDirectory | None = None
    _background: set[asyncio.Task[None]] = field(default_factory=set)

    def add_listener(self, listener: Listener) -> None:
        """Tell `listener` every durable transition of every run from now on."""
        self.listeners.add(listener)

    def start_background(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run `work` (a loop that never ends on its own) until `stop_background`/`close`."""
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def stop_background(self) -> None:
        tasks = list(self._background)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def close(self) -> None:
        await self.stop_background()
        if self.keeper is not None:
            await self.keeper.stop()
        if self.http is not None:
            await self.http.aclose()
        if self.shop is not None:
            await self.shop.close()
        await self.store.close()


def meaning_indexes(settings: Settings, intents: Sequence[IntentDef]) -> list[SemanticIndex]:
    """Recognition by meaning as the settings ask (STEPWISE_EMBEDDINGS, issue 33)."""
    from agent_core.understanding.recognition.backends import (
        EndpointEmbedder,
        default_cache_dir,
        semantic_indexes,
    )

    endpoint = None
    if settings.embeddings == "endpoint":
        assert settings.embeddings_url and settings.embeddings_model  # checked by Settings
        key = settings.embeddings_api_key
        endpoint = EndpointEmbedder(
            settings.embeddings_url,
            settings.embeddings_model,
            api_key=key.get_secret_value() if key else None,
            timeout_s=settings.embeddings_timeout_s,
        )
    return semantic_indexes(
        settings.embeddings,
        intents,
        cache_dir=settings.embeddings_cache or default_cache_dir(),
        endpoint=endpoint,
    )


def build_planner(settings: Settings, catalog: Mapping[str, ToolSpec] = CATALOG) -> Planner:
    """The rule planner, or (STEPWISE_PLANNER=model) the model planner with it as fallback."""
    intents = load_intents(settings.intents_path)
    rules = RuleBasedPlanner(
        order_id_pattern=settings.order_pattern,
        catalog=catalog,
        intents=intents,
        meaning=meaning_indexes(settings, intents),
    )
    if settings.planner != "model":
        return rules
    assert settings.llm_base_url and settings.llm_model  # checked by Settings
    # Only here: importing the model client costs 1.5 s, and the default planner is `rule`.
    import openai

    from agent_core.understanding.model_planner import ModelPlanner

    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else "none"
    client = openai.AsyncOpenAI(
        base_url=settings.llm_base_url,
        api_key=key,
        timeout=settings.llm_timeout_s,
        max_retries=0,  # the planner retries with its own bounded backoff
    )
    return ModelPlanner(client, settings.llm_model, fallback=rules, catalog=catalog)


def staff_rule(settings: Settings) -> StaffRule | None:
    """Staff approval (issue 14) only with a staff chat to ask in: otherwise nobody could
    ever approve, and every such call would wait until it expired."""
    if settings.staff_approval_above is None or settings.staff_chat_id is None:
        return None
    return StaffRule(
        staff_above=settings.staff_approval_above,
        four_eyes_above=settings.staff_four_eyes_above,
    )


async def open_runtime(
    settings: Settings,
    listeners: Sequence[Listener] = (),
    *,
    tools: Sequence[Tool] | None = None,
    policy: FailurePolicy | None = None,
    clock: Callable[[], datetime] = utcnow,
) -> Runtime:
    """Open storage and the shop, and wire the agent.

    `tools` replaces the demo shop's tools (another backend); `policy` replaces the default
    failure policy (e.g. a shorter backoff); `clock` the agent's and executor's clock
    (pauses and their expiry; tests).
    """
    # A bad tools file fails before anything is opened (ToolsConfigError: one clear line).
    http_config = load_tools_config(settings.tools_path) if settings.tools_path else None
    if http_config is not None:
        # httpx logs every request url at INFO: `[http] query` keys must not be in them.
        redact_in_logs(*http_config.url_secrets())
    lease = Lease(process_owner(), length=timedelta(seconds=settings.lease_s))
    store = await open_store(settings.db_path, busy_timeout_s=settings.db_timeout_s, lease=lease)
    shop: DemoShop | None = None
    http: httpx.AsyncClient | None = None
    customers: CustomerDirectory | None = None
    try:
        if http_config is not None and tools is None:
            http = new_client(http_config)
            customers = customer_directory(http_config, http)
            tools = build_http_tools(http_config, http, customers=customers)
        elif tools is None:
            shop = await open_shop(
                settings.db_path,
                seed_path=settings.shop_seed,
                latency_s=settings.shop_latency_ms / 1000,
            )
            tools = shop_tools(shop)
    except BaseException:
        await store.close()
        raise
    # Every failed call to the shop's system is a WARNING line (`stepwise.shop_log`).
    hub = Listeners([log_shop_failures, *listeners])
    registry = ToolRegistry(tools)
    executor = Executor(
        registry,
        journal=store,
        listeners=[hub],
        policy=policy,
        staff_rule=staff_rule(settings),
        clock=clock,
    )
    agent = Agent(
        # The catalog in use: a tool declared only in STEPWISE_TOOLS is planned from its phrases.
        build_planner(settings, registry.catalog()),
        executor,
        store,
        approval_ttl=settings.approval_ttl,
        clock=clock,
        new_id=new_run_id,  # a run started for a Telegram update: its id says which
    )
    keeper = LeaseKeeper(store, agent.working.ids)
    keeper.start()
    return Runtime(
        settings=settings,
        agent=agent,
        store=store,
        shop=shop,
        http=http,
        listeners=hub,
        keeper=keeper,
        customers=customers,
    )
