"""What one message costs the shared Bot API limiter (`bot.shared_ratelimit`) on PostgreSQL.

    python -m bench.shared_limiter [--url postgresql://…] [--calls 500]

Each call is admitted and answered through `SharedRateLimiter.process_request` with an
instant callback, over 10 chats, with budgets so large that none makes it wait: only the
two transactions are timed (admit: lock the overall and chat rows, decide, write; then
answered), sequentially, in a fresh schema that is dropped afterwards. The in-process
`SlidingWindowRateLimiter` is timed the same way beside it. Prints one JSON line per figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import statistics
import sys
import time
from collections.abc import Sequence
from urllib.parse import quote

import psycopg

from bot.ratelimit import SlidingWindowRateLimiter
from bot.shared_ratelimit import Budgets, SharedRateLimiter

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"


async def _ok() -> bool:
    return True


async def _time(limiter: SlidingWindowRateLimiter, calls: int) -> list[float]:
    await limiter.initialize()
    try:
        took = []
        for n in range(calls):
            started = time.perf_counter()
            await limiter.process_request(
                _ok, (), {}, "sendMessage", {"chat_id": 1000 + n % 10}, None
            )
            took.append(time.perf_counter() - started)
        return took
    finally:
        await limiter.shutdown()


def _print(system: str, took: list[float]) -> None:
    ordered = sorted(took)
    for metric, value in (
        ("mean", statistics.fmean(took)),
        ("p50", ordered[len(ordered) // 2]),
        ("p95", ordered[int(len(ordered) * 0.95)]),
    ):
        line = {"section": "shared_limiter", "system": system, "metric": metric}
        print(json.dumps({**line, "value": round(value * 1e3, 4), "unit": "ms/call"}), flush=True)


async def _main(url: str, calls: int) -> None:
    schema = f"bench_limiter_{secrets.token_hex(4)}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    try:
        separator = "&" if "?" in url else "?"
        scoped = f"{url}{separator}options={quote(f'-csearch_path={schema}')}"
        many = Budgets(overall_limit=10**6, chat_burst=10**6)  # never waits: only the cost counts
        _print(
            "in-process",
            await _time(SlidingWindowRateLimiter(overall_max_rate=10**6, chat_burst=10**6), calls),
        )
        _print("postgresql", await _time(SharedRateLimiter(scoped, budgets=many), calls))
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.shared_limiter")
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args(argv)
    asyncio.run(_main(args.url, args.calls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
