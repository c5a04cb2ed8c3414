"""`python -m standin`: serve the stand-in until interrupted, for bots in other processes.

The first line on stdout is a JSON object with the URLs, so a parent process (or a
person) can wire the bot up without guessing: {"base_url": ..., "base_file_url": ...,
"test_url": ...}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal

from .server import DEFAULT_TOKEN, StandIn


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m standin", description="Local stand-in for the Telegram Bot API."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8081, help="0 picks a free port")
    parser.add_argument("--token", default=DEFAULT_TOKEN)
    parser.add_argument("--per-chat-limit", type=int, default=20, help="messages/edits per second")
    parser.add_argument("--group-limit", type=int, default=20, help="messages per minute")
    parser.add_argument("--global-limit", type=int, default=30, help="messages per second")
    parser.add_argument(
        "--callback-query-ttl", type=float, default=None, help="seconds to answer a button"
    )
    return parser.parse_args(argv)


async def _serve(args: argparse.Namespace) -> None:
    standin = StandIn(
        args.token,
        per_chat_limit=args.per_chat_limit,
        group_limit=args.group_limit,
        global_limit=args.global_limit,
        callback_query_ttl=args.callback_query_ttl,
    )
    await standin.start(args.host, args.port)
    urls = {
        "base_url": standin.base_url,
        "base_file_url": standin.base_file_url,
        "test_url": f"{standin.url}/_test",
    }
    print(json.dumps(urls), flush=True)
    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopped.set)
    try:
        await stopped.wait()
    finally:
        await standin.stop()


def main(argv: list[str] | None = None) -> None:
    """Entry point: parse arguments and serve until SIGINT/SIGTERM."""
    asyncio.run(_serve(_arguments(argv)))


if __name__ == "__main__":
    main()
