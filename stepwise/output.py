"""Lines for the person who started a long-running command, safe when nobody reads them.

`make run 2>&1 | tee log` and Ctrl-C: the terminal sends SIGINT to the whole process
group, `tee` dies first, and the demo's "stopping…" line meets a closed pipe. Python
ignores SIGPIPE, so that print raised BrokenPipeError in the middle of the shutdown,
skipped it, and left the demo hanging on its ports. A reader that went away is not an
error: the stream is pointed at /dev/null and the command carries on (and exits 0).
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TextIO


def say(text: str, *, stream: TextIO | None = None) -> None:
    """Print `text` and flush; if the reader has gone (EPIPE), silence the stream."""
    target = stream or sys.stdout
    try:
        print(text, file=target, flush=True)
    except BrokenPipeError:
        silence(target)


def silence(stream: TextIO) -> None:
    """Send whatever `stream` still holds, and everything after, to /dev/null (at exit
    Python flushes stdout once more and would report the broken pipe again)."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
