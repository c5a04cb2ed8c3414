"""`stepwise standin`: the local Bot API stand-in, served for bots in other processes.

The first line on stdout is a JSON object with the URLs, so a parent process (or a
person) can wire the bot up without guessing: {"base_url": ..., "base_file_url": ...,
"test_url": ...}. It then serves until SIGINT/SIGTERM.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from standin import DEFAULT_TOKEN, FloodLimits, StandIn
from stepwise.signals import stop_signals

EXIT_OK = 0


@dataclass(frozen=True)
class StandInOptions:
    """The `standin` flags."""

    host: str = "127.0.0.1"
    port: int = 8081  # 0 picks a free port
    token: str = DEFAULT_TOKEN
    flood: FloodLimits = field(default_factory=FloodLimits)
    callback_query_ttl: float | None = None  # seconds to answer a button


def new_standin(options: StandInOptions) -> StandIn:
    return StandIn(
        options.token, flood=options.flood, callback_query_ttl=options.callback_query_ttl
    )


async def serve_standin(options: StandInOptions) -> int:
    """Serve the stand-in until SIGINT/SIGTERM; returns the process exit code."""
    standin = new_standin(options)
    with stop_signals() as stopped:
        await standin.start(options.host, options.port)
        urls = {
            "base_url": standin.base_url,
            "base_file_url": standin.base_file_url,
            "test_url": f"{standin.url}/_test",
        }
        print(json.dumps(urls), flush=True)
        try:
            await stopped.wait()
        finally:
            await standin.stop()
    return EXIT_OK
