"""`/status` in the staff group (issue 25 item 5): what `/readyz` says, in words, to staff
only, from a real `stepwise serve` over HTTP with the stand-in.

Everything waits on conditions (a message, a row, an HTTP answer), never on durations.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from standin import StandIn

from .conftest import OTHER, STAFF, ServeProcess, bot_texts, query, until
from .test_operating import free_port, until_http

FORUM = -1006666666666


def processed(db: Path, needle: str) -> bool:
    """An update whose body contains `needle` was stored and its handling finished."""
    sql = "SELECT 1 FROM inbox WHERE body LIKE ? AND processed_at IS NOT NULL"
    return bool(query(db, sql, f"%{needle}%"))


async def test_status_in_the_staff_group_says_what_readyz_says(
    standin: StandIn, tmp_path: Path
) -> None:
    standin.add_chat(FORUM, STAFF, title="Support staff", is_forum=True, first_name="Sam")
    standin.set_bot_rights(FORUM, can_manage_topics=True)
    standin.set_member(FORUM, OTHER, "member", first_name="Nosy")
    port = free_port()
    db = tmp_path / "bot.db"
    env = {"STEPWISE_STAFF_CHAT_ID": str(FORUM), "STEPWISE_HEALTH_PORT": str(port)}
    serve = ServeProcess(standin, db, tmp_path, env=env)
    await serve.start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            ready = await until_http(client, "/readyz", lambda r: r.status_code == 200, what="up")

            # Someone in the group who is not staff: handled, and answered with nothing.
            standin.inject_message(FORUM, OTHER, "/status", first_name="Nosy")
            await until(lambda: processed(db, "Nosy"), what="nosy /status handled")
            assert bot_texts(standin, FORUM) == []

            standin.inject_message(FORUM, STAFF, "/status", first_name="Sam")
            texts = await until(lambda: bot_texts(standin, FORUM), what="the status")
            assert len(texts) == 1
            words = texts[0].splitlines()
            assert words[0] == "Ready: every check passes."
            checks = ready.json()["checks"]
            assert len(words) == 1 + len(checks)
            for line, check in zip(words[1:], checks, strict=True):
                assert line.startswith(f"✔ {check['name'].replace('_', ' ')}")
            assert "✔ poller lease: holding" in words

            # Telegram stops answering getMe: /readyz fails, and /status says so, why too.
            standin.fail_next("getMe", 1_000_000, status=502)
            red = await until_http(client, "/readyz", lambda r: r.status_code == 503, what="red")
            reason = next(c for c in red.json()["checks"] if c["name"] == "telegram")["reason"]
            topic = standin.add_topic(FORUM, "ops", STAFF)
            standin.inject_message(FORUM, STAFF, "/status", message_thread_id=topic)
            texts = await until(lambda: bot_texts(standin, FORUM)[1:], what="the status while red")
            assert texts[0].splitlines()[0] == "Not ready: 1 check(s) failing."
            assert f"✘ telegram: {reason}" in texts[0].splitlines()
            answer = standin.bot_messages(FORUM)[-1]
            assert answer.message_thread_id == topic  # answered in the topic it was asked in
    finally:
        assert await serve.stop() == 0
