"""Signed-out console sessions, kept with the runs so a sign-out survives a restart.

A console session is a signed cookie (`console.auth.Sessions`); signing out records its
nonce here until the cookie would have expired anyway, so a copied cookie stays dead
whatever happens to the process. Expired rows are dropped whenever one is added.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import aiosqlite

from storage.db import Statements, fetch

_REVOKE = (
    "INSERT INTO revoked_sessions (nonce, expires_at) VALUES (:nonce, :expires_at)"
    " ON CONFLICT(nonce) DO UPDATE SET expires_at = max(expires_at, excluded.expires_at)"
)
_FORGET_EXPIRED = "DELETE FROM revoked_sessions WHERE expires_at <= :now"
_IS_REVOKED = "SELECT 1 FROM revoked_sessions WHERE nonce = ? AND expires_at > ?"


class Revocations:
    """`console.auth.RevocationStore` on the run database (`store.revocations`)."""

    def __init__(
        self, conn: aiosqlite.Connection, write: Callable[[Statements], Awaitable[None]]
    ) -> None:
        self._conn = conn
        self._write = write

    async def revoke(self, nonce: str, expires_at: int, now: int) -> None:
        """Refuse the session `nonce` until `expires_at` (Unix seconds); forget old ones."""
        await self._write(
            [
                (_FORGET_EXPIRED, {"now": now}),
                (_REVOKE, {"nonce": nonce, "expires_at": expires_at}),
            ]
        )

    async def is_revoked(self, nonce: str, now: int) -> bool:
        return bool(await fetch(self._conn, _IS_REVOKED, (nonce, now)))
