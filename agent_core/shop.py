"""The demo shop as three tools: look up an order, search the policies, cancel an order.

What each tool is (name, description, arguments, risk) is declared in `catalog`; this
module only says how the demo shop carries it out.

This module is pure: it knows the shape of the shop (`ShopBackend`) but not where the data
lives (`storage.shop.SqliteShop` keeps it in SQLite). The tools turn backend answers into
the typed failures the executor's policy understands; every message here is internal (for
staff logs) and plain English, the customer-facing wording is composed elsewhere.

Ownership is checked on every call: a customer may only see or cancel their own orders,
and a refusal says nothing about somebody else's order beyond that it is not theirs.
"""

from __future__ import annotations

from collections.abc import Awaitable
from enum import StrEnum
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, Field

from agent_core.catalog import (
    CANCEL_ORDER,
    GET_ORDER_STATUS,
    SEARCH_POLICY,
)
from agent_core.catalog import OrderArgs as OrderArgs  # re-exported: the shop's arguments
from agent_core.catalog import PolicyArgs as PolicyArgs
from agent_core.catalog import PolicyLang as PolicyLang
from agent_core.models import ErrorType
from agent_core.tools import Tool, ToolContext, ToolFailure

T = TypeVar("T")

OrderStatus = Literal["pending", "shipping", "delivered", "cancelled"]

# Orders in these states can still be cancelled.
CANCELLABLE_STATUSES: frozenset[str] = frozenset({"pending", "shipping"})


class Order(BaseModel):
    id: str
    owner_user_id: int
    status: OrderStatus
    eta: str | None = None
    items: list[str] = Field(default_factory=list)


class Policy(BaseModel):
    title: str
    text: str
    lang: PolicyLang


class CancelResult(StrEnum):
    CANCELLED = "cancelled"  # this call cancelled the order
    REPLAYED = "replayed"  # an earlier call with the same idempotency key cancelled it
    REFUSED = "refused"  # delivered, or already cancelled by another key; nothing changed
    NOT_FOUND = "not_found"  # no such order; nothing changed
    FORBIDDEN = "forbidden"  # the order belongs to somebody else; nothing changed


class CancelOutcome(BaseModel):
    result: CancelResult
    # The order after the call (for REPLAYED: as it was when the earlier call cancelled it).
    # None for NOT_FOUND and FORBIDDEN, so a refusal carries nothing about another's order.
    order: Order | None = None


class BackendUnavailable(Exception):
    """The shop backend cannot answer right now (locked, read-only, disk full).

    Transient: the tools report it as `ErrorType.UNAVAILABLE`, which the policy may retry;
    a retried cancellation is safe because it carries the same idempotency key.
    """


class IdempotencyConflict(ValueError):
    """An idempotency key already used for a different order or user: a caller bug."""


class ShopBackend(Protocol):
    async def get_order(self, order_id: str) -> Order | None: ...

    async def search_policies(self, query: str, lang: PolicyLang) -> list[Policy]: ...

    async def cancel_order(
        self, order_id: str, user_id: int, idempotency_key: str
    ) -> CancelOutcome: ...


def shop_tools(backend: ShopBackend, *, timeout_s: float = 5.0) -> list[Tool]:
    """The three shop tools, bound to `backend`."""

    async def get_order_status(args: OrderArgs, ctx: ToolContext) -> dict[str, Any]:
        order = await _call(backend.get_order(args.order_id))
        if order is None:
            raise ToolFailure(ErrorType.NOT_FOUND, f"order {args.order_id} does not exist")
        if order.owner_user_id != ctx.user_id:
            raise ToolFailure(ErrorType.PERMISSION_DENIED, _not_yours(args.order_id))
        return {
            "order_id": order.id,
            "status": order.status,
            "eta": order.eta,
            "items": list(order.items),
        }

    async def search_policy(args: PolicyArgs, ctx: ToolContext) -> list[dict[str, str]]:
        policies = await _call(backend.search_policies(args.query, args.lang))
        if not policies:
            raise ToolFailure(ErrorType.EMPTY_RESULT, f"no policy matches {args.query!r}")
        return [{"title": p.title, "text": p.text} for p in policies]

    async def cancel_order(args: OrderArgs, ctx: ToolContext) -> dict[str, Any]:
        # Ownership and state are checked by the backend inside the same transaction as the
        # cancellation, so nothing can change between the check and the write. A pre-read
        # here would also wrongly refuse a replay (the order is already cancelled by then).
        outcome = await _call(backend.cancel_order(args.order_id, ctx.user_id, ctx.idempotency_key))
        if outcome.result is CancelResult.NOT_FOUND:
            raise ToolFailure(ErrorType.NOT_FOUND, f"order {args.order_id} does not exist")
        if outcome.result is CancelResult.FORBIDDEN:
            raise ToolFailure(ErrorType.PERMISSION_DENIED, _not_yours(args.order_id))
        if outcome.result is CancelResult.REFUSED:
            status = outcome.order.status if outcome.order is not None else "in a final state"
            raise ToolFailure(
                ErrorType.INVALID_ARGUMENTS,
                f"order {args.order_id} is {status} and can no longer be cancelled",
            )
        return {"order_id": args.order_id, "status": "cancelled"}

    return [
        Tool.of(GET_ORDER_STATUS, get_order_status, timeout_s=timeout_s),
        Tool.of(SEARCH_POLICY, search_policy, timeout_s=timeout_s),
        Tool.of(CANCEL_ORDER, cancel_order, timeout_s=timeout_s),
    ]


async def _call(pending: Awaitable[T]) -> T:
    """Await a backend call; a backend outage becomes the retryable `unavailable` failure."""
    try:
        return await pending
    except BackendUnavailable as exc:
        raise ToolFailure(ErrorType.UNAVAILABLE, f"shop backend unavailable: {exc}") from exc


def _not_yours(order_id: str) -> str:
    # Says only what the caller already knows (the id they asked about): no status, owner,
    # items or dates of an order that is not theirs.
    return f"order {order_id} is not accessible to the requesting user"
