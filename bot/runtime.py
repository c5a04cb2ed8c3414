"""The composition root: settings in, a ready `Agent` out.

The CLI and the Telegram bot both start here, so they share one executor configuration
and one database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import httpx

from agent_core.agent import Agent
from agent_core.executor import Executor, Listener
from agent_core.http import build_http_tools, load_tools_config, new_client
from agent_core.planner import RuleBasedPlanner
from agent_core.policy import FailurePolicy
from agent_core.shop import shop_tools
from agent_core.tools import Tool, ToolRegistry
from bot.settings import Settings
from storage.runs import SqliteRunStore
from storage.shop import SqliteShop


@dataclass
class Runtime:
    settings: Settings
    agent: Agent
    store: SqliteRunStore
    shop: SqliteShop | None  # the demo shop, unless STEPWISE_TOOLS points at an HTTP API
    http: httpx.AsyncClient | None = None

    async def close(self) -> None:
        if self.http is not None:
            await self.http.aclose()
        if self.shop is not None:
            await self.shop.close()
        await self.store.close()


async def open_runtime(
    settings: Settings,
    listeners: Sequence[Listener] = (),
    *,
    tools: Sequence[Tool] | None = None,
    policy: FailurePolicy | None = None,
) -> Runtime:
    """Open storage and the shop, and wire the agent.

    `tools` replaces the demo shop's tools (another backend); `policy` replaces the default
    failure policy (e.g. a shorter backoff).
    """
    # A bad tools file fails before anything is opened (ToolsConfigError: one clear line).
    http_config = load_tools_config(settings.tools_path) if settings.tools_path else None
    store = await SqliteRunStore.open(settings.db_path, busy_timeout_s=settings.db_timeout_s)
    shop: SqliteShop | None = None
    http: httpx.AsyncClient | None = None
    try:
        if http_config is not None and tools is None:
            http = new_client(http_config)
            tools = build_http_tools(http_config, http)
        elif tools is None:
            shop = await SqliteShop.open(
                settings.db_path,
                seed_path=settings.shop_seed,
                latency_s=settings.shop_latency_ms / 1000,
            )
            tools = shop_tools(shop)
    except BaseException:
        await store.close()
        raise
    registry = ToolRegistry(tools)
    executor = Executor(registry, journal=store, listeners=listeners, policy=policy)
    agent = Agent(
        RuleBasedPlanner(order_id_pattern=settings.order_pattern),
        executor,
        store,
        approval_ttl=settings.approval_ttl,
    )
    return Runtime(settings=settings, agent=agent, store=store, shop=shop, http=http)
