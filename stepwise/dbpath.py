"""Is `STEPWISE_DB` a place a database can be at all? Checked before anything opens it.

A path that can never hold the database (its directory is missing, it is a directory,
it is under /proc, it is some other kind of file) is a configuration mistake: one line
naming the setting and exit 2, not "storage unavailable, try again shortly" (exit 4),
which stays for trouble that passes (a lock, a read-only or full disk). An existing file
is left to SQLite: its troubles are storage's.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

SQLITE_HEADER = b"SQLite format 3\x00"


def db_path_problem(path: Path) -> str | None:
    """Why `path` cannot be the database (a sentence naming STEPWISE_DB), or None.

    For a missing file, a probe file is created (and removed) next to where it will be,
    so a directory that refuses new files is found now rather than by SQLite's "unable to
    open database file" later. Nothing is left behind.
    """
    where = f"STEPWISE_DB={path}"
    if path.is_dir():
        return f"{where} is a directory; give the path of a database file in it"
    parent = path.parent
    if not parent.exists():
        return f"{where}: the directory {parent} does not exist"
    if not parent.is_dir():
        return f"{where}: {parent} is not a directory"
    if path.exists():
        return _existing_file_problem(path, where)
    try:
        fd, probe = tempfile.mkstemp(prefix=".stepwise-probe-", dir=parent)
    except OSError as exc:
        if exc.errno in (errno.EROFS, errno.ENOSPC, errno.EDQUOT):
            return None  # a read-only or full disk passes: storage says "try again"
        return f"{where}: cannot create a database file there ({exc.strerror or exc})"
    os.close(fd)
    os.unlink(probe)
    return None


def _existing_file_problem(path: Path, where: str) -> str | None:
    if not path.is_file():
        return f"{where} is not a regular file"
    try:
        with path.open("rb") as file:
            header = file.read(len(SQLITE_HEADER))
    except OSError:
        return None  # unreadable right now: storage reports it
    if header and header != SQLITE_HEADER[: len(header)]:
        return f"{where} is not a SQLite database (is it the right file?)"
    return None
