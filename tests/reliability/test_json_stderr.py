"""With `STEPWISE_LOG_FORMAT=json` every line a command writes on stderr is one JSON
object: the start-up retries ("cannot reach Telegram … retrying"), the last word before
giving up, a bad setting, a usage error and a traceback that ends the process — so a log
shipper reading the journal drops none of them.

Real subprocesses; the Bot API is a closed local port.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from .conftest import serve_env, stepwise


def json_lines(stderr: str) -> list[dict[str, Any]]:
    """Every line of `stderr` as an object; fails naming the first line that is not one."""
    lines = []
    for line in stderr.splitlines():
        try:
            parsed = json.loads(line)
        except ValueError:
            raise AssertionError(f"not JSON: {line!r}\n{stderr}") from None
        assert isinstance(parsed, dict) and {"ts", "level", "message"} <= parsed.keys(), line
        lines.append(parsed)
    return lines


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_serve_with_the_bot_api_unreachable_writes_only_json(tmp_path: Path) -> None:
    base = f"http://127.0.0.1:{closed_port()}/bot"
    code, out, err = await stepwise(
        tmp_path / "bot.db",
        *("serve", "--staff-port", "0"),
        workdir=tmp_path,
        base_url=base,
        STEPWISE_LOG_FORMAT="json",
    )
    assert code == 4, err
    lines = json_lines(err)
    retries = [x for x in lines if x["message"].startswith("cannot reach Telegram")]
    assert len(retries) == 3 and all(x["level"] == "WARNING" for x in retries), lines
    assert lines[-1]["level"] == "ERROR" and "giving up" in lines[-1]["message"], lines
    assert all(x["logger"] == "stepwise" for x in [*retries, lines[-1]])


async def test_a_bad_setting_and_a_usage_error_are_json_lines(tmp_path: Path) -> None:
    db = tmp_path / "bot.db"
    code, _, err = await stepwise(
        db, "runs", workdir=tmp_path, STEPWISE_LOG_FORMAT="json", STEPWISE_LEASE="soon"
    )
    assert code == 2
    (line,) = json_lines(err)
    assert line["level"] == "ERROR" and line["message"].startswith("bad setting STEPWISE_LEASE")

    code, _, err = await stepwise(
        db, "runs", "--bogus", workdir=tmp_path, STEPWISE_LOG_FORMAT="json"
    )
    assert code == 2
    (line,) = json_lines(err)
    assert "unrecognized arguments: --bogus" in line["message"]

    # The same mistakes in text mode stay the familiar one plain line.
    code, _, err = await stepwise(db, "runs", workdir=tmp_path, STEPWISE_LEASE="soon")
    assert code == 2 and err.startswith("stepwise: bad setting STEPWISE_LEASE"), err


async def test_a_traceback_that_ends_the_process_is_one_json_line(tmp_path: Path) -> None:
    script = (
        "from stepwise.logs import configure_logging\n"
        "configure_logging('json')\n"
        "raise RuntimeError('the disk caught fire')\n"
    )
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-c", script),
        env=serve_env(tmp_path / "bot.db"),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 1
    (line,) = json_lines(err.decode())
    assert line["level"] == "CRITICAL" and "the disk caught fire" in line["exc"]
