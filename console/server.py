"""Running the console next to the bot, in the same event loop and on the same store
(served from a task by `serving.serve_embedded`)."""

from __future__ import annotations

import logging

from console.app import create_app
from serving import EmbeddedServer, serve_embedded
from storage.store import RunStore

log = logging.getLogger(__name__)


ConsoleServer = EmbeddedServer  # the console's name for it, kept for its callers


async def serve_console(
    store: RunStore, staff_token: str, host: str = "127.0.0.1", port: int = 8080
) -> ConsoleServer:
    """Start the staff console on host:port (0 picks a free port) and return once it listens.

    Raises ValueError for a weak staff token and OSError when the address is unavailable.
    """
    app = create_app(store, staff_token=staff_token)
    return await serve_embedded(app, host, port, name="stepwise-console", grace_s=2)


async def serve_staff_console(
    store: RunStore, staff_token: str | None, host: str = "127.0.0.1", port: int = 8080
) -> ConsoleServer | None:
    """For `stepwise serve`: the console if a staff token is set and `port` is not 0.

    A production bot never invents a token (it would end up in logs): without
    STEPWISE_STAFF_TOKEN the console stays off and says so once.
    """
    if port == 0:
        return None
    if not staff_token:
        log.warning("staff console is off: set STEPWISE_STAFF_TOKEN to enable it")
        return None
    server = await serve_console(store, staff_token, host, port)
    log.warning("staff console on %s", server.url)
    return server
