"""No command shows the bot token, whole or in part, even at DEBUG: every process installs
the redaction when it has read its settings, before its first request (`stepwise.secrecy`).

Each command runs as the operator runs it (a subprocess, `STEPWISE_LOG_LEVEL=DEBUG`, in
text and JSON log formats), against the Bot API stand-in over HTTP, and its stdout and
stderr are searched for the token and pieces of its secret half.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from standin import StandIn

from .conftest import DEMO, TOKEN, ServeProcess, bot_texts, serve_env, stepwise, until

SECRET = TOKEN.partition(":")[2]
PIECES = (TOKEN, SECRET, SECRET[:12], SECRET[-12:])


def assert_no_token(*outputs: str) -> None:
    text = "\n".join(outputs)
    for piece in PIECES:
        assert piece not in text, f"{piece!r} shown:\n{text[-3000:]}"


@pytest.fixture(params=["text", "json"])
def log_env(request: pytest.FixtureRequest) -> dict[str, str]:
    return {"STEPWISE_LOG_LEVEL": "DEBUG", "STEPWISE_LOG_FORMAT": request.param}


async def test_one_shot_commands_show_no_token_at_debug(
    standin: StandIn, tmp_path: Path, log_env: dict[str, str]
) -> None:
    db = tmp_path / "bot.db"
    env = {"base_url": standin.base_url, **log_env}
    for args in (
        ("migrate",),
        ("doctor",),
        ("ask", "where is my order A1001", "--user", str(DEMO)),
        ("runs",),
        ("export",),
        ("recover",),
        ("tools", "check"),
    ):
        code, out, err = await stepwise(db, *args, workdir=tmp_path, **env)
        assert code in (0, 1), (args, out, err)
        if args == ("doctor",):
            # It did talk to Telegram with the token (httpx logged the requests at DEBUG).
            assert "getMe" in out + err and "[REDACTED]" in err, err
        assert_no_token(out, err)


async def test_serve_shows_no_token_at_debug(
    standin: StandIn, tmp_path: Path, log_env: dict[str, str]
) -> None:
    serve = ServeProcess(standin, tmp_path / "bot.db", tmp_path, env=log_env)
    await serve.start()
    try:
        standin.inject_message(DEMO, DEMO, "where is my order A1001")
        await until(lambda: any("A1001" in t for t in bot_texts(standin, DEMO)), what="answer")
    finally:
        assert await serve.stop() == 0
    log = serve.log.read_text(errors="replace")
    assert "getUpdates" in log  # the Bot API requests were logged, the token blanked
    assert_no_token(log)


async def test_demo_shows_no_token_at_debug(tmp_path: Path, log_env: dict[str, str]) -> None:
    """The demo runs its own stand-in; the operator's TELEGRAM_BOT_TOKEN is in its
    environment all the same (`make run` without one starts it)."""
    env = serve_env(tmp_path / "demo.db", **log_env)
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "stepwise", "demo"),
        *("--chat-port", "0", "--staff-port", "0", "--bot-api-port", "0"),
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out = b""
    try:
        while b"Staff token" not in out:  # printed once everything listens
            line = await asyncio.wait_for(proc.stdout.readline(), 120)
            assert line, "the demo exited before it was ready"
            out += line
    finally:
        proc.send_signal(signal.SIGTERM)
        rest, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode(errors="replace")
    assert_no_token(out.decode(errors="replace"), rest.decode(), err.decode(errors="replace"))
