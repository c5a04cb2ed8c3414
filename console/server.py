"""Running the console next to the bot, in the same event loop and on the same store.

uvicorn serves it from a task. We bind the socket ourselves, so a port in use is an
ordinary OSError for the caller (uvicorn would `sys.exit` inside its task) and port 0
works for tests; and uvicorn's own signal handling is switched off, because the process
that embeds the console (the bot, the demo) decides when everything stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator

import uvicorn

from console.app import create_app
from storage.store import RunStore

log = logging.getLogger(__name__)


class _EmbeddedServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # the host process owns SIGINT/SIGTERM


class ConsoleServer:
    """A started console; `await stop()` closes it (idempotent)."""

    def __init__(self, server: uvicorn.Server, task: asyncio.Task[None], host: str, port: int):
        self._server = server
        self._task = task
        self.host = host
        self.port = port

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def stop(self) -> None:
        self._server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


async def serve_console(
    store: RunStore, staff_token: str, host: str = "127.0.0.1", port: int = 8080
) -> ConsoleServer:
    """Start the staff console on host:port (0 picks a free port) and return once it listens.

    Raises ValueError for a weak staff token and OSError when the address is unavailable.
    """
    app = create_app(store, staff_token=staff_token)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        server_header=False,
        proxy_headers=False,
        timeout_graceful_shutdown=2,
    )
    server = _EmbeddedServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]), name="stepwise-console")
    while not server.started:
        if task.done():
            sock.close()
            task.result()  # re-raise what stopped it
            raise RuntimeError("the staff console stopped while starting")
        await asyncio.sleep(0.01)
    return ConsoleServer(server, task, host, sock.getsockname()[1])


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
