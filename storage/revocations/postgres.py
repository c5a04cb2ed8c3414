"""Signed-out console sessions in PostgreSQL: `storage.revocations.sqlite.Revocations`' twin.

The same table and rules (a nonce refused until its cookie would have expired; expired
rows dropped whenever one is added), through the run store's write queue and pool.
PostgreSQL spells the scalar maximum `GREATEST` (its `max` is only an aggregate).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from storage.pg import PgOperation, Record, execute_statements, pg_sql

_REVOKE = pg_sql(
    "INSERT INTO revoked_sessions (nonce, expires_at) VALUES (:nonce, :expires_at)"
    " ON CONFLICT (nonce) DO UPDATE"
    " SET expires_at = GREATEST(revoked_sessions.expires_at, excluded.expires_at)"
)
_FORGET_EXPIRED = pg_sql("DELETE FROM revoked_sessions WHERE expires_at <= :now")
_IS_REVOKED = "SELECT 1 FROM revoked_sessions WHERE nonce = ? AND expires_at > ?"


class PgRevocations:
    """`console.auth.RevocationStore` on PostgreSQL (`PgRunStore.revocations`)."""

    def __init__(
        self,
        read: Callable[[str, Sequence[Any]], Awaitable[list[Record]]],
        submit: Callable[[PgOperation], Awaitable[Any]],
    ) -> None:
        self._read = read
        self._submit = submit

    async def revoke(self, nonce: str, expires_at: int, now: int) -> None:
        """Refuse the session `nonce` until `expires_at` (Unix seconds); forget old ones."""
        await self._submit(
            execute_statements(
                [
                    (_FORGET_EXPIRED, {"now": now}),
                    (_REVOKE, {"nonce": nonce, "expires_at": expires_at}),
                ]
            )
        )

    async def is_revoked(self, nonce: str, now: int) -> bool:
        return bool(await self._read(_IS_REVOKED, (nonce, now)))
