"""The physical limit: plain aiosqlite committing small rows, nothing else.

A "run" here is `commits_per_run` single-row INSERTs, each its own committed transaction
(autocommit), with the same file settings as stepwise (WAL, same synchronous). Sequentially
that is the fastest a one-commit-per-transition journal can go through aiosqlite. With 50
concurrent runs, all statements go through the one connection's worker thread, so commits
are serialized: "one commit per transition", the naive limit that group commit must beat.
"""

from __future__ import annotations

from pathlib import Path

import aiosqlite

from bench.measure import CommitCounter, checkpoint, db_bytes

PAYLOAD = "x" * 120  # about the size of a small event row


class LimitSubject:
    name = "aiosqlite-limit"

    def __init__(self, path: Path, conn: aiosqlite.Connection, commits_per_run: int) -> None:
        self.path = path
        self.conn = conn
        self.commits_per_run = commits_per_run
        self.runs = 0
        self.counter = CommitCounter()  # unused: autocommit INSERTs emit no COMMIT statement

    @classmethod
    async def open(cls, path: Path, synchronous: str, commits_per_run: int) -> LimitSubject:
        conn = await aiosqlite.connect(str(path), isolation_level=None)
        await conn.execute("PRAGMA journal_mode = WAL")
        await conn.execute(f"PRAGMA synchronous = {synchronous}")
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS journal"
            " (seq INTEGER PRIMARY KEY, run INTEGER NOT NULL, n INTEGER NOT NULL, payload TEXT)"
        )
        return cls(path, conn, commits_per_run)

    async def run_one(self, number: int) -> None:
        for n in range(self.commits_per_run):
            # isolation_level=None: one statement, one transaction, one commit.
            await self.conn.execute(
                "INSERT INTO journal (run, n, payload) VALUES (?, ?, ?)", (number, n, PAYLOAD)
            )
        self.runs += 1

    async def count_commits(self, on: bool) -> None:
        return None  # by construction: commits_per_run per run

    async def verify(self) -> None:
        async with self.conn.execute("SELECT count(*) FROM journal") as cur:
            row = await cur.fetchone()
        rows = int(row[0]) if row else 0
        if rows != self.runs * self.commits_per_run:
            raise AssertionError(f"{rows} rows for {self.runs} runs")

    async def size(self) -> int:
        await checkpoint(self.conn)
        return db_bytes(self.path)

    async def close(self) -> None:
        await self.conn.close()
