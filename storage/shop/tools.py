"""The demo shop as tools: look up an order, search the policies, cancel an order, request a
return or a refund, change the delivery address, track the parcel.

What each tool is (name, description, arguments, risk) is declared in `catalog`; this
module only says how the demo shop carries it out.

This module is pure: it knows the shape of the shop (`ShopBackend`) but not where the data
lives (`storage.shop.sqlite.SqliteShop` keeps it in SQLite). The tools turn backend answers into
the typed failures the executor's policy understands; every message here is internal (for
staff logs) and plain English, the customer-facing wording is composed elsewhere.

Ownership is checked on every call: a customer may only see or change their own orders,
and a refusal says nothing about somebody else's order beyond that it is not theirs.

Every change (cancel, return, refund, address) is keyed by the executor's idempotency key
(`run_id:step_id`) in the backend's ledger, in the same transaction as the change: a retry
or a recovery with the same key replays the first outcome instead of acting twice, so
these tools declare `Idempotency.HONOURED` and are retried without a reconcile read. A
refusal carries a reason code the catalog explains to the customer (`ToolSpec.refusals`).
"""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, Field

from agent_core.catalog.builtin import (
    CANCEL_ORDER,
    CHANGE_ADDRESS,
    GET_ORDER_STATUS,
    REQUEST_REFUND,
    REQUEST_RETURN,
    SEARCH_POLICY,
    TRACK_PARCEL,
)
from agent_core.catalog.contracts import AddressArgs, RefundArgs, ReturnArgs
from agent_core.catalog.contracts import OrderArgs as OrderArgs  # re-exported: the shop's arguments
from agent_core.catalog.contracts import OrderStatus as OrderStatus
from agent_core.catalog.contracts import PolicyArgs as PolicyArgs
from agent_core.catalog.contracts import PolicyLang as PolicyLang
from agent_core.execution.tools import Tool, ToolContext, ToolFailure
from agent_core.models import ErrorType, Idempotency

T = TypeVar("T")

# Orders in these states can still be cancelled.
CANCELLABLE_STATUSES: frozenset[str] = frozenset({"pending", "shipping"})


class ParcelEvent(BaseModel):
    """One carrier event, in the carrier's words (`text`, `place`), with the customer's
    language where the carrier offers it (`text_zh`, `place_zh`)."""

    at: str
    text: str
    place: str | None = None
    text_zh: str | None = None
    place_zh: str | None = None


class Tracking(BaseModel):
    """What the carrier reports about an order's parcel; events newest first."""

    carrier: str | None = None
    number: str | None = None
    events: list[ParcelEvent] = Field(default_factory=list)


class Order(BaseModel):
    id: str
    owner_user_id: int
    status: OrderStatus
    eta: str | None = None
    items: list[str] = Field(default_factory=list)
    # None in seeds written before these existed: a refund or return is then refused.
    amount_paid: Decimal | None = None
    # What earlier refunds gave back (`ShopBackend.get_order` fills it; None: not read).
    refunded: Decimal | None = None
    delivered_at: datetime | None = None
    address: str | None = None
    tracking: Tracking | None = None


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


class ActionResult(StrEnum):
    DONE = "done"  # this call made the change
    REPLAYED = "replayed"  # an earlier call with the same idempotency key made it
    REFUSED = "refused"  # not allowed in the order's state; nothing changed (see `reason`)
    NOT_FOUND = "not_found"
    FORBIDDEN = "forbidden"  # somebody else's order; nothing changed


class ActionOutcome(BaseModel):
    """What a return, refund or address change came to."""

    result: ActionResult
    # The tool's result for DONE and REPLAYED (for REPLAYED: as the first call returned it).
    data: dict[str, Any] | None = None
    # Why a REFUSED call was refused: a code of the tool's catalog entry ("window_closed").
    reason: str | None = None


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

    async def request_return(
        self, order_id: str, user_id: int, reason: str | None, idempotency_key: str
    ) -> ActionOutcome: ...

    async def request_refund(
        self,
        order_id: str,
        user_id: int,
        amount: Decimal,
        reason: str | None,
        idempotency_key: str,
    ) -> ActionOutcome: ...

    async def change_address(
        self, order_id: str, user_id: int, address: str, idempotency_key: str
    ) -> ActionOutcome: ...


def shop_tools(backend: ShopBackend, *, timeout_s: float = 5.0) -> list[Tool]:
    """The shop's tools, bound to `backend`."""

    async def get_order_status(args: OrderArgs, ctx: ToolContext) -> dict[str, Any]:
        order = await _call(backend.get_order(args.order_id))
        if order is None:
            raise ToolFailure(ErrorType.NOT_FOUND, f"order {args.order_id} does not exist")
        if order.owner_user_id != ctx.user_id:
            raise ToolFailure(ErrorType.PERMISSION_DENIED, _not_yours(args.order_id))
        observed: dict[str, Any] = {
            "order_id": order.id,
            "status": order.status,
            "eta": order.eta,
            "items": list(order.items),
        }
        if order.amount_paid is not None:
            # What a refund may still give back: the staff approving one read it.
            observed["amount_paid"] = f"{order.amount_paid:.2f}"
            observed["refunded"] = f"{order.refunded or Decimal(0):.2f}"
        return observed

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

    async def track_parcel(args: OrderArgs, ctx: ToolContext) -> dict[str, Any]:
        order = await _call(backend.get_order(args.order_id))
        if order is None:
            raise ToolFailure(ErrorType.NOT_FOUND, f"order {args.order_id} does not exist")
        if order.owner_user_id != ctx.user_id:
            raise ToolFailure(ErrorType.PERMISSION_DENIED, _not_yours(args.order_id))
        tracking = order.tracking or Tracking()
        if not tracking.events:
            raise ToolFailure(ErrorType.EMPTY_RESULT, f"no parcel events for {args.order_id}")
        return {
            "order_id": order.id,
            "carrier": tracking.carrier,
            "tracking_number": tracking.number,
            "events": [e.model_dump(exclude_none=True) for e in tracking.events],
        }

    async def request_return(args: ReturnArgs, ctx: ToolContext) -> dict[str, Any]:
        pending = backend.request_return(
            args.order_id, ctx.user_id, args.reason, ctx.idempotency_key
        )
        return _acted(args.order_id, await _call(pending))

    async def request_refund(args: RefundArgs, ctx: ToolContext) -> dict[str, Any]:
        pending = backend.request_refund(
            args.order_id, ctx.user_id, args.amount, args.reason, ctx.idempotency_key
        )
        return _acted(args.order_id, await _call(pending))

    async def change_address(args: AddressArgs, ctx: ToolContext) -> dict[str, Any]:
        pending = backend.change_address(
            args.order_id, ctx.user_id, args.address, ctx.idempotency_key
        )
        return _acted(args.order_id, await _call(pending))

    # The shop's ledger replays a repeated key (see the module docstring): its changes
    # are retried as they are, with no reconcile read.
    keyed = Idempotency.HONOURED
    return [
        Tool.of(GET_ORDER_STATUS, get_order_status, timeout_s=timeout_s),
        Tool.of(SEARCH_POLICY, search_policy, timeout_s=timeout_s),
        Tool.of(CANCEL_ORDER, cancel_order, timeout_s=timeout_s, idempotency=keyed),
        Tool.of(REQUEST_RETURN, request_return, timeout_s=timeout_s, idempotency=keyed),
        Tool.of(REQUEST_REFUND, request_refund, timeout_s=timeout_s, idempotency=keyed),
        Tool.of(CHANGE_ADDRESS, change_address, timeout_s=timeout_s, idempotency=keyed),
        Tool.of(TRACK_PARCEL, track_parcel, timeout_s=timeout_s),
    ]


def _acted(order_id: str, outcome: ActionOutcome) -> dict[str, Any]:
    """A change's result, or the typed failure that says why nothing changed."""
    if outcome.result is ActionResult.NOT_FOUND:
        raise ToolFailure(ErrorType.NOT_FOUND, f"order {order_id} does not exist")
    if outcome.result is ActionResult.FORBIDDEN:
        raise ToolFailure(ErrorType.PERMISSION_DENIED, _not_yours(order_id))
    if outcome.result is ActionResult.REFUSED or outcome.data is None:
        reason = outcome.reason or "refused"
        raise ToolFailure(
            ErrorType.INVALID_ARGUMENTS, f"order {order_id}: {reason}", code=outcome.reason
        )
    return outcome.data


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
