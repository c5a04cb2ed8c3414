"""The built-in tools' arguments and results, as pydantic models.

Arguments come from customers (through a planner), so each type says exactly what it
accepts, and a step whose arguments break it stops as `invalid_arguments` before anything
runs: an order id (trimmed, upper-cased, at most 32 characters), free text (bounded, no
control characters), an amount (a positive decimal with at most two places, shown as
`59.00`).

Results are what a backend must answer (the result contract, checked for every backend):
strict (no coercion: `5` is not a string); extra fields pass through.
"""

from __future__ import annotations

import unicodedata
from decimal import Decimal
from typing import Annotated, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    StringConstraints,
)

PolicyLang = Literal["zh", "en"]
# "paid": paid for, not shipped yet (a refund or a cancel both give the money back);
# "refunded": the shop paid it all back and closed it. The built-in demo shop uses neither;
# a shop's own API may (WooCommerce's "processing" and "refunded").
OrderStatus = Literal["pending", "paid", "shipping", "delivered", "cancelled", "refunded"]
ORDER_STATUSES: Final = ("pending", "paid", "shipping", "delivered", "cancelled", "refunded")

MAX_AMOUNT: Final = Decimal("1000000")


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must be a non-empty string")
    return value


def no_control_characters(value: str) -> str:
    # Cc: control (newlines, NUL, ESC); Cf: format (zero-width, bidi overrides); Cs/Co:
    # surrogates and private use. None belongs in an address or a reason.
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co") for ch in value):
        raise ValueError("must not contain control characters")
    return value


NonBlank = Annotated[str, AfterValidator(_not_blank)]

OrderId = Annotated[
    str, StringConstraints(strip_whitespace=True, to_upper=True, min_length=1, max_length=32)
]


Address = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=5, max_length=200),
    AfterValidator(no_control_characters),
]
Reason = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=300),
    AfterValidator(no_control_characters),
]
# A positive amount of money with at most two decimal places, shown and sent as "59.00".
Amount = Annotated[
    Decimal,
    Field(gt=0, le=MAX_AMOUNT, decimal_places=2, allow_inf_nan=False),
    PlainSerializer(lambda value: f"{value:.2f}", return_type=str),
]


# -- arguments --------------------------------------------------------------------------


class OrderArgs(BaseModel):
    """Arguments of the tools that need only an order: status, cancel, track."""

    model_config = ConfigDict(extra="forbid")

    order_id: OrderId


class PolicyArgs(BaseModel):
    """Arguments of `search_policy`."""

    model_config = ConfigDict(extra="forbid")

    query: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
    lang: PolicyLang = "en"


class ReturnArgs(BaseModel):
    """Arguments of `request_return`."""

    model_config = ConfigDict(extra="forbid")

    order_id: OrderId
    reason: Reason | None = None


class RefundArgs(BaseModel):
    """Arguments of `request_refund`."""

    model_config = ConfigDict(extra="forbid")

    order_id: OrderId
    amount: Amount
    reason: Reason | None = None


class AddressArgs(BaseModel):
    """Arguments of `change_address`."""

    model_config = ConfigDict(extra="forbid")

    order_id: OrderId
    address: Address


# -- results ----------------------------------------------------------------------------


class OrderResult(BaseModel):
    """`get_order_status`: the order's state (and eta, items when known)."""

    model_config = ConfigDict(strict=True, extra="allow")

    order_id: NonBlank
    status: OrderStatus
    eta: str | None = None


class CancelResult(BaseModel):
    """`cancel_order`: the order, now cancelled."""

    model_config = ConfigDict(strict=True, extra="allow")

    order_id: NonBlank
    status: Literal["cancelled"]


class PolicyEntry(BaseModel):
    """One policy `search_policy` found (extra fields are dropped)."""

    model_config = ConfigDict(strict=True, extra="ignore")

    title: str
    text: str


class ReturnResult(BaseModel):
    """`request_return`: the return's number."""

    model_config = ConfigDict(strict=True, extra="allow")

    order_id: NonBlank
    return_id: NonBlank


class RefundResult(BaseModel):
    """`request_refund`: the refund's number and amount ("59.00")."""

    model_config = ConfigDict(strict=True, extra="allow")

    order_id: NonBlank
    refund_id: NonBlank
    amount: NonBlank


class AddressResult(BaseModel):
    """`change_address`: the address the order now ships to."""

    model_config = ConfigDict(strict=True, extra="allow")

    order_id: NonBlank
    address: NonBlank


class ParcelEvent(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")

    at: NonBlank
    text: NonBlank
    place: str | None = None


class ParcelResult(BaseModel):
    """`track_parcel`: the carrier's latest events, newest first."""

    model_config = ConfigDict(strict=True, extra="allow")

    order_id: NonBlank
    carrier: str | None = None
    tracking_number: str | None = None
    events: list[ParcelEvent]
