"""Run until SIGINT or SIGTERM: the one way `serve`, `demo` and `standin` wait to stop.

A long-running command installs the handlers before it starts serving (a signal during
start-up then stops it cleanly instead of raising KeyboardInterrupt mid-start), waits on
the event, and removes the handlers again when it is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def stop_signals() -> Iterator[asyncio.Event]:
    """An event set by the first SIGINT/SIGTERM while the block runs (call in a loop)."""
    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, stopped.set)
    try:
        yield stopped
    finally:
        for signum in STOP_SIGNALS:
            with contextlib.suppress(ValueError, RuntimeError):
                loop.remove_signal_handler(signum)
