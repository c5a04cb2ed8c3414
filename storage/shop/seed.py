"""The demo shop's seed file (`storage/shop/seed.json`, or `STEPWISE_SHOP_SEED`): its schema,
loading it, and the rows it becomes.

Every field added after the first version is optional, so a seed written before keeps
working: `amount_paid` (what a refund may give back at most), `delivered_at` or
`delivered_days_ago` (when the return window started; relative, so the bundled demo works
on any day it is first started), `address`, and `tracking` (the carrier's events, newest
first). `return_window_days` (default 7) is the shop's return window.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from agent_core.catalog.contracts import OrderStatus, PolicyLang
from agent_core.ids import UserId

DEFAULT_SEED_PATH = Path(__file__).with_name("seed.json")
SEEDED_KEY = "seeded"
RETURN_WINDOW_KEY = "return_window_days"
DEFAULT_RETURN_WINDOW_DAYS = 7

NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class SeedParcelEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    at: NonEmpty
    text: NonEmpty
    place: NonEmpty | None = None
    # The same event in Chinese, where the carrier offers it.
    text_zh: NonEmpty | None = None
    place_zh: NonEmpty | None = None


class SeedTracking(BaseModel):
    model_config = ConfigDict(extra="forbid")

    carrier: NonEmpty | None = None
    number: NonEmpty | None = None
    events: list[SeedParcelEvent] = Field(default_factory=list)


class SeedOrder(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, StringConstraints(min_length=1, max_length=32)]
    owner_user_id: UserId  # a Telegram user id (agent_core.ids), like every id that comes in
    status: OrderStatus
    eta: str | None
    items: list[NonEmpty]
    amount_paid: Annotated[Decimal, Field(ge=0, decimal_places=2)] | None = None
    delivered_at: datetime | date | None = None
    delivered_days_ago: Annotated[int, Field(ge=0, le=3650)] | None = None
    address: NonEmpty | None = None
    tracking: SeedTracking | None = None

    @field_validator("id")
    @classmethod
    def _canonical_id(cls, value: str) -> str:
        # The tools strip and upper-case what they are given; any other id is unreachable.
        if value != value.strip().upper():
            raise ValueError("order ids must be upper-case without surrounding spaces")
        return value

    @model_validator(mode="after")
    def _one_delivery_date(self) -> Self:
        if self.delivered_at is not None and self.delivered_days_ago is not None:
            raise ValueError("give delivered_at or delivered_days_ago, not both")
        return self

    def delivered(self, now: datetime) -> datetime | None:
        """When it was delivered, as an aware UTC datetime (`now` anchors the relative form)."""
        if self.delivered_days_ago is not None:
            return now - timedelta(days=self.delivered_days_ago)
        value = self.delivered_at
        if value is None:
            return None
        if not isinstance(value, datetime):
            value = datetime(value.year, value.month, value.day, tzinfo=UTC)
        return value if value.tzinfo else value.replace(tzinfo=UTC)


class SeedPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    keywords: list[NonEmpty] = Field(min_length=1)
    title: NonEmpty
    text: NonEmpty
    lang: PolicyLang


class ShopSeed(BaseModel):
    """The schema of `shop_seed.json`."""

    model_config = ConfigDict(extra="forbid")

    orders: list[SeedOrder]
    policies: list[SeedPolicy]
    return_window_days: Annotated[int, Field(ge=0, le=365)] = DEFAULT_RETURN_WINDOW_DAYS

    @model_validator(mode="after")
    def _unique_order_ids(self) -> Self:
        seen: set[str] = set()
        for index, order in enumerate(self.orders):
            if order.id in seen:
                raise ValueError(f"orders.{index}.id: duplicate order id {order.id!r}")
            seen.add(order.id)
        return self


class SeedError(ValueError):
    """A seed file that cannot be used: the message (one line) names it and what is wrong."""


def load_seed(path: str | Path) -> ShopSeed:
    """Read and validate a seed file; a SeedError names the file and the bad field."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SeedError(f"shop seed {path} cannot be read: {exc}") from exc
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SeedError(
            f"shop seed {path} is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
        ) from exc
    try:
        return ShopSeed.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}"
            for err in exc.errors()
        )
        raise SeedError(f"shop seed {path} is invalid: {problems}") from exc


ORDER_COLUMNS = (
    "id",
    "owner_user_id",
    "status",
    "eta",
    "items",
    "amount_paid",
    "delivered_at",
    "address",
    "tracking",
)


def seed_statements(
    seed: ShopSeed, source: Path, now: datetime
) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """What seeding writes (for `executemany`, `?` placeholders, valid on both backends):
    orders, policies, and the `seeded` marker, which also keeps the shop's return window."""
    marker = {
        "seed": str(source),
        "orders": len(seed.orders),
        "policies": len(seed.policies),
        RETURN_WINDOW_KEY: seed.return_window_days,
        "at": now.isoformat(),
    }
    columns = ", ".join(ORDER_COLUMNS)
    # An upsert both backends spell alike: an order already there takes the seed's values.
    replace = ", ".join(f"{c} = excluded.{c}" for c in ORDER_COLUMNS if c != "id")
    return [
        (
            f"INSERT INTO shop_orders ({columns}) "
            f"VALUES ({', '.join('?' * len(ORDER_COLUMNS))}) "
            f"ON CONFLICT (id) DO UPDATE SET {replace}",
            order_rows(seed, now),
        ),
        (
            "INSERT INTO shop_policies (keywords, title, text, lang) VALUES (?, ?, ?, ?)",
            [
                (json.dumps(p.keywords, ensure_ascii=False), p.title, p.text, p.lang)
                for p in seed.policies
            ],
        ),
        (
            "INSERT INTO shop_meta (key, value) VALUES (?, ?)",
            [(SEEDED_KEY, json.dumps(marker, ensure_ascii=False))],
        ),
    ]


def return_window_of(marker: str | None) -> int:
    """The return window (days) a seeded shop keeps in its `seeded` marker (JSON); the
    default for a shop seeded before the window was kept, or not seeded at all."""
    if marker is None:
        return DEFAULT_RETURN_WINDOW_DAYS
    try:
        days = json.loads(marker).get(RETURN_WINDOW_KEY, DEFAULT_RETURN_WINDOW_DAYS)
    except (ValueError, AttributeError):
        return DEFAULT_RETURN_WINDOW_DAYS
    return (
        days if isinstance(days, int) and not isinstance(days, bool) else DEFAULT_RETURN_WINDOW_DAYS
    )


def order_rows(seed: ShopSeed, now: datetime) -> list[tuple[Any, ...]]:
    """The `shop_orders` rows of a seed, in `ORDER_COLUMNS` order."""
    rows = []
    for o in seed.orders:
        delivered = o.delivered(now)
        rows.append(
            (
                o.id,
                o.owner_user_id,
                o.status,
                o.eta,
                json.dumps(o.items, ensure_ascii=False),
                f"{o.amount_paid:.2f}" if o.amount_paid is not None else None,
                delivered.isoformat() if delivered is not None else None,
                o.address,
                o.tracking.model_dump_json(exclude_none=True) if o.tracking else None,
            )
        )
    return rows
