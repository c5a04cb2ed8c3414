"""One ASGI app served by uvicorn from a task, on a socket bound here.

Binding the socket ourselves makes a port in use an ordinary OSError for the caller
(uvicorn would `sys.exit` inside its task) and lets port 0 pick a free port for tests.
uvicorn's own signal handling is off: the process that embeds the server decides when
everything stops (`stepwise/signals.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator

import uvicorn
from starlette.types import ASGIApp


class _Uvicorn(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # the host process owns SIGINT/SIGTERM


class EmbeddedServer:
    """A started server; `await stop()` closes it (idempotent)."""

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


def _bind(host: str, port: int) -> socket.socket:
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
    return sock


async def serve_embedded(
    app: ASGIApp, host: str, port: int, *, name: str, grace_s: int
) -> EmbeddedServer:
    """Serve `app` on host:port (0 picks a free port); returns once it listens.

    OSError when the address is unavailable; whatever stopped uvicorn if it stopped while
    starting. `name` names the task (and the error); `grace_s` is how long open requests
    get when it stops.
    """
    sock = _bind(host, port)
    config = uvicorn.Config(
        app,
        log_level="warning",
        # uvicorn's own handlers write plain text past the root logger's; without them its
        # lines go through the process's handler (JSON lines with STEPWISE_LOG_FORMAT=json).
        log_config=None,
        access_log=False,
        lifespan="off",
        server_header=False,
        proxy_headers=False,
        timeout_graceful_shutdown=grace_s,
    )
    server = _Uvicorn(config)
    task = asyncio.create_task(server.serve(sockets=[sock]), name=name)
    while not server.started:  # uvicorn sets `started` and offers no event to wait on
        if task.done():
            sock.close()
            task.result()  # re-raise what stopped it
            raise RuntimeError(f"{name} stopped while starting")
        await asyncio.sleep(0.01)
    return EmbeddedServer(server, task, host, sock.getsockname()[1])
