"""The demo shop's operations, written once for both backends (`LedgerShop`).

`storage.shop.sqlite.SqliteShop` and `storage.shop.postgres.PgShop` differ only in how a transaction is
opened and which driver errors mean "unavailable"; what each operation reads, decides and
writes lives here, so the two cannot drift apart. A backend subclass supplies
`_transaction` (run a body on a `storage.shop.ledger.ShopTx`, in ONE transaction for a
write, rolled back on any failure) and the driver's error types.

Every change (cancel, return, refund, address) is keyed by the executor's idempotency key
in `shop_ledger`, written in the same transaction as the change (see `_change`): the same
key never acts twice, it replays the first outcome. Refusals write nothing. Driver errors
surface as `ShopUnavailable` after the transaction was rolled back.

One class of one idea (the backend's operations, each one transaction); it is long because
each change carries its own rule and writes.
"""

from __future__ import annotations

import asyncio
import json
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from pydantic import BaseModel

from agent_core.catalog.builtin import CANCEL_ORDER, CHANGE_ADDRESS, REQUEST_REFUND, REQUEST_RETURN
from storage.db import StorageUnavailable
from storage.shop.ledger import (
    CHANGED,
    LedgerEntry,
    Row,
    ShopTx,
    canonical,
    load_order,
    record,
    replayed,
)
from storage.shop.rules import address_refusal, refund_refusal, return_refusal
from storage.shop.seed import SEEDED_KEY, load_seed, return_window_of, seed_statements
from storage.shop.tools import (
    CANCELLABLE_STATUSES,
    ActionOutcome,
    ActionResult,
    BackendUnavailable,
    CancelOutcome,
    CancelResult,
    Order,
    Policy,
    PolicyLang,
)

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
Clock = Callable[[], datetime]


class ShopUnavailable(StorageUnavailable, BackendUnavailable):
    """The shop's database cannot be used right now; nothing was half-written.

    Both a `StorageUnavailable` (what storage callers catch) and an
    `storage.shop.tools.BackendUnavailable` (what the tools turn into `unavailable`).
    """


def utc_now() -> datetime:
    return datetime.now(UTC)


class LedgerShop(ABC):
    """`ShopBackend` over one database; subclasses open transactions on their driver.

    `latency_s` simulates a slow upstream: every operation sleeps that long AFTER its work
    is done (for a change: after the COMMIT) and before returning. That opens a window in
    which the side effect is durable but the executor has not yet recorded it, so timeout
    and crash tests can hit exactly that window and prove that a retry or a recovery with
    the same idempotency key replays instead of acting twice. `clock` decides the return
    window (tests pass a fixed one).
    """

    def __init__(self, *, latency_s: float = 0.0, clock: Clock = utc_now) -> None:
        if latency_s < 0:
            raise ValueError("latency_s must not be negative")
        self._latency_s = latency_s
        self._clock = clock

    # -- what a backend supplies --

    # Driver errors that mean the database cannot be used right now.
    _db_errors: tuple[type[BaseException], ...] = ()

    @abstractmethod
    async def _transaction(self, body: Callable[[ShopTx], Awaitable[T]], *, write: bool) -> T:
        """Run `body`; for a write in ONE transaction committed after it, rolled back on
        any failure. Driver errors propagate (`_run` turns them into `ShopUnavailable`)."""

    @abstractmethod
    async def close(self) -> None: ...

    def _describe(self, exc: BaseException) -> str:
        return str(exc)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- ShopBackend: reads --

    async def get_order(self, order_id: str) -> Order | None:
        order_id_ = canonical(order_id)

        async def read(tx: ShopTx) -> Order | None:
            # With what earlier refunds gave back, read in the same transaction: a staff
            # member approving a refund sees how much of the order is left to refund.
            order = await load_order(tx, order_id_)
            if order is None:
                return None
            row = await tx.fetchone(
                "SELECT coalesce(sum(amount_cents), 0) FROM shop_refunds WHERE order_id = ?",
                (order_id_,),
            )
            cents = int(row[0]) if row is not None else 0
            return order.model_copy(update={"refunded": Decimal(cents) / 100})

        order = await self._run(read, f"read order {order_id}", write=False)
        await self._simulate_latency()
        return order

    async def search_policies(self, query: str, lang: PolicyLang) -> list[Policy]:
        """Policies whose keyword is in the query or contains it (case-insensitive).

        Policies in `lang` come first; only when none matches in `lang` are matches in
        the other language returned. Within a language, in seed order (by id).
        """
        rows = await self._run(
            lambda tx: tx.fetchall(
                "SELECT id, keywords, title, text, lang FROM shop_policies ORDER BY id"
            ),
            "read policies",
            write=False,
        )
        await self._simulate_latency()
        return matching_policies(rows, query, lang)

    # -- ShopBackend: changes, each at most once per idempotency key --

    async def cancel_order(
        self, order_id: str, user_id: int, idempotency_key: str
    ) -> CancelOutcome:
        """Cancel `order_id` for `user_id`, at most once per `idempotency_key`.

        One transaction: a key already in the ledger replays its stored outcome; otherwise
        the order is checked (exists, belongs to `user_id`, still pending or shipping),
        set to cancelled and the ledger row written. Refusals write nothing.
        """
        order_id = canonical(order_id)

        async def act(tx: ShopTx, order: Order) -> CancelOutcome:
            if order.status not in CANCELLABLE_STATUSES:
                return CancelOutcome(result=CancelResult.REFUSED, order=order)
            changed = await tx.execute(
                "UPDATE shop_orders SET status = 'cancelled' WHERE id = ? AND status IN (?, ?)",
                (order_id, *sorted(CANCELLABLE_STATUSES)),
            )
            if changed != 1:  # cannot happen: the order is ours until COMMIT; never half-write
                raise ShopUnavailable(
                    f"cannot {CANCEL_ORDER.name} {order_id}: "
                    f"order {order_id} changed during cancellation"
                )
            return CancelOutcome(
                result=CancelResult.CANCELLED,
                order=order.model_copy(update={"status": "cancelled"}),
            )

        return await self._change(
            CANCEL_ORDER.name,
            order_id,
            user_id,
            idempotency_key,
            CancelOutcome,
            act,
            missing=CancelOutcome(result=CancelResult.NOT_FOUND),
            forbidden=CancelOutcome(result=CancelResult.FORBIDDEN),
        )

    async def request_return(
        self, order_id: str, user_id: int, reason: str | None, idempotency_key: str
    ) -> ActionOutcome:
        """Open a return for a delivered order within the return window (once per order)."""
        order_id = canonical(order_id)

        async def act(tx: ShopTx, order: Order) -> ActionOutcome:
            row = await tx.fetchone(
                "SELECT count(*) FROM shop_returns WHERE order_id = ?", (order_id,)
            )
            count = int(row[0]) if row is not None else 0
            refusal = return_refusal(
                order,
                now=self._clock(),
                window_days=await _return_window(tx),
                already_requested=count > 0,
            )
            if refusal is not None:
                return ActionOutcome(result=ActionResult.REFUSED, reason=refusal)
            return_id = f"R-{order_id}-{count + 1}"
            await tx.execute(
                "INSERT INTO shop_returns (id, order_id, reason, at) VALUES (?, ?, ?, ?)",
                (return_id, order_id, reason, _now()),
            )
            data = {"order_id": order_id, "return_id": return_id}
            return ActionOutcome(result=ActionResult.DONE, data=data)

        return await self._action(REQUEST_RETURN.name, order_id, user_id, idempotency_key, act)

    async def request_refund(
        self,
        order_id: str,
        user_id: int,
        amount: Decimal,
        reason: str | None,
        idempotency_key: str,
    ) -> ActionOutcome:
        """Refund `amount` of a shipped or delivered order: at most what was paid, minus
        what earlier refunds gave back."""
        order_id = canonical(order_id)
        cents = int((amount * 100).to_integral_value())

        async def act(tx: ShopTx, order: Order) -> ActionOutcome:
            row = await tx.fetchone(
                "SELECT count(*), coalesce(sum(amount_cents), 0) FROM shop_refunds "
                "WHERE order_id = ?",
                (order_id,),
            )
            count, refunded = (int(row[0]), int(row[1])) if row is not None else (0, 0)
            refusal = refund_refusal(order, amount=amount, refunded=Decimal(refunded) / 100)
            if refusal is not None:
                return ActionOutcome(result=ActionResult.REFUSED, reason=refusal)
            refund_id = f"F-{order_id}-{count + 1}"
            await tx.execute(
                "INSERT INTO shop_refunds (id, order_id, amount_cents, reason, at) "
                "VALUES (?, ?, ?, ?, ?)",
                (refund_id, order_id, cents, reason, _now()),
            )
            data = {"order_id": order_id, "refund_id": refund_id, "amount": f"{amount:.2f}"}
            return ActionOutcome(result=ActionResult.DONE, data=data)

        return await self._action(REQUEST_REFUND.name, order_id, user_id, idempotency_key, act)

    async def change_address(
        self, order_id: str, user_id: int, address: str, idempotency_key: str
    ) -> ActionOutcome:
        """Ship a pending order to `address` instead."""
        order_id = canonical(order_id)

        async def act(tx: ShopTx, order: Order) -> ActionOutcome:
            refusal = address_refusal(order)
            if refusal is not None:
                return ActionOutcome(result=ActionResult.REFUSED, reason=refusal)
            await tx.execute("UPDATE shop_orders SET address = ? WHERE id = ?", (address, order_id))
            data = {"order_id": order_id, "address": address}
            return ActionOutcome(result=ActionResult.DONE, data=data)

        return await self._action(CHANGE_ADDRESS.name, order_id, user_id, idempotency_key, act)

    # -- extras for tests and the reliability suite --

    async def cancellation_count(self, order_id: str | None = None) -> int:
        """How many cancellations the ledger holds (for one order, or in total)."""
        return await self.ledger_count(CANCEL_ORDER.name, order_id)

    async def ledger_count(self, tool: str | None = None, order_id: str | None = None) -> int:
        """How many changes the ledger holds (of one tool, for one order, or in total)."""
        sql = "SELECT COUNT(*) FROM shop_ledger WHERE 1 = 1"
        params: list[Any] = []
        if tool is not None:
            sql += " AND tool = ?"
            params.append(tool)
        if order_id is not None:
            sql += " AND order_id = ?"
            params.append(canonical(order_id))
        row = await self._run(
            lambda tx: tx.fetchone(sql, tuple(params)), "count the ledger", write=False
        )
        return int(row[0]) if row is not None else 0

    # -- internals --

    async def _action(
        self,
        tool: str,
        order_id: str,
        user_id: int,
        key: str,
        act: Callable[[ShopTx, Order], Awaitable[ActionOutcome]],
    ) -> ActionOutcome:
        return await self._change(
            tool,
            order_id,
            user_id,
            key,
            ActionOutcome,
            act,
            missing=ActionOutcome(result=ActionResult.NOT_FOUND),
            forbidden=ActionOutcome(result=ActionResult.FORBIDDEN),
        )

    async def _change(
        self,
        tool: str,
        order_id: str,
        user_id: int,
        key: str,
        outcome_type: type[M],
        act: Callable[[ShopTx, Order], Awaitable[M]],
        *,
        missing: M,
        forbidden: M,
    ) -> M:
        """One change in one transaction, at most once per idempotency key.

        The key is locked first (a second call with it waits, then replays), and the order
        is read for change (two keys racing for one order see each other's result). A key
        already in the ledger replays its stored outcome (`REPLAYED`); otherwise the order
        is checked (exists, belongs to `user_id`), `act` decides and writes, and a
        successful change is recorded in the ledger before COMMIT.
        """

        entry = LedgerEntry(key=key, tool=tool, order_id=order_id, user_id=user_id)

        async def body(tx: ShopTx) -> M:
            await tx.lock(key)
            stored = await replayed(tx, entry)
            if stored is not None:
                return outcome_type.model_validate({**stored, "result": "replayed"})
            order = await load_order(tx, order_id, for_change=True)
            if order is None:
                return missing
            if order.owner_user_id != user_id:
                return forbidden
            outcome = await act(tx, order)
            if getattr(outcome, "result", None) in CHANGED:
                await record(tx, entry, outcome.model_dump_json())
            return outcome

        # Shielded: a caller's timeout must not interrupt the transaction half-way; it runs
        # to COMMIT or ROLLBACK, and a retry with the same key then sees the outcome.
        outcome = await asyncio.shield(self._run(body, f"{tool} {order_id}", write=True))
        await self._simulate_latency()
        return outcome

    async def _seed_once(self, seed_path: Path) -> None:
        """Seed the shop on its first start; the seed file is read only then."""
        # Fast path without a write lock: a seeded database never needs the seed file.
        if await self._run(_is_seeded, "read shop metadata", write=False):
            return
        seed = load_seed(seed_path)  # validated before any write

        async def body(tx: ShopTx) -> None:
            # Checked again under the lock: another process may have seeded meanwhile.
            await tx.lock(SEEDED_KEY)
            if await _is_seeded(tx):
                return
            for sql, params in seed_statements(seed, seed_path, self._clock()):
                await tx.executemany(sql, params)

        await asyncio.shield(self._run(body, "seed the shop", write=True))

    async def _run(self, body: Callable[[ShopTx], Awaitable[T]], what: str, *, write: bool) -> T:
        try:
            return await self._transaction(body, write=write)
        except self._db_errors as exc:
            raise ShopUnavailable(f"cannot {what}: {self._describe(exc)}") from exc

    async def _simulate_latency(self) -> None:
        if self._latency_s > 0:
            await asyncio.sleep(self._latency_s)


def matching_policies(rows: list[Row], query: str, lang: PolicyLang) -> list[Policy]:
    """The policies among `rows` (in order) that `query` matches, `lang` first."""
    needle = query.strip().casefold()
    if not needle:
        return []
    keywords = [(row, json.loads(row["keywords"])) for row in rows]
    # A query that IS a keyword names its topic ("cancellation fee"): only those policies,
    # not every policy one of whose keywords it contains ("cancellation").
    exact = [row for row, kws in keywords if needle in (k.casefold() for k in kws)]
    matches = [
        Policy(title=row["title"], text=row["text"], lang=row["lang"])
        for row in (exact or [row for row, kws in keywords if _matches(needle, kws)])
    ]
    preferred = [p for p in matches if p.lang == lang]
    return preferred or matches


async def _return_window(tx: ShopTx) -> int:
    # Seeding keeps the window in the `seeded` marker (`seed_statements`), not a row of its own.
    row = await tx.fetchone("SELECT value FROM shop_meta WHERE key = ?", (SEEDED_KEY,))
    return return_window_of(row["value"] if row is not None else None)


async def _is_seeded(tx: ShopTx) -> bool:
    return await tx.fetchone("SELECT 1 FROM shop_meta WHERE key = ?", (SEEDED_KEY,)) is not None


def _matches(needle: str, keywords: list[str]) -> bool:
    for keyword in keywords:
        folded = keyword.casefold()
        if folded and (folded in needle or needle in folded):
            return True
    return False


def _now() -> str:
    return datetime.now(UTC).isoformat()
