"""When the demo shop refuses a change, as pure functions of the order (and the clock).

Each returns None when the change is allowed, or the reason it is not: a code of the
tool's catalog entry (`ToolSpec.refusals`), which the answer explains in the customer's
words. The backend calls them inside the transaction that makes the change, so nothing can
change between the check and the write.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from storage.shop.tools import Order


def return_refusal(
    order: Order, *, now: datetime, window_days: int, already_requested: bool
) -> str | None:
    """A return: only of a delivered order, within `window_days` of delivery, once."""
    if order.status != "delivered":
        return "not_delivered"
    if already_requested:
        return "already_requested"
    if order.delivered_at is None:
        return "no_delivery_date"  # a seed that never said when: no window to check
    if now - order.delivered_at > timedelta(days=window_days):
        return "window_closed"
    return None


def refund_refusal(order: Order, *, amount: Decimal, refunded: Decimal) -> str | None:
    """A refund: of a shipped or delivered order, at most what was paid minus earlier refunds.

    A pending order is cancelled rather than refunded; a cancelled one is refunded already.
    """
    if order.status == "pending":
        return "not_shipped"
    if order.status == "cancelled":
        return "already_refunded"
    if order.amount_paid is None:
        return "no_payment_record"
    if amount > order.amount_paid - refunded:
        return "amount_too_high"
    return None


def address_refusal(order: Order) -> str | None:
    """An address change: only while the order has not shipped."""
    return None if order.status == "pending" else "not_pending"
