"""`stepwise doctor`'s judgements, one by one (the whole command runs as a subprocess in
tests/reliability/test_doctor.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
from pydantic import SecretStr

from stepwise.doctor import (
    Mark,
    Redactor,
    clock_line,
    model_line,
    recognition_line,
    staff_id_lines,
    webhook_line,
)
from stepwise.settings import Settings
from storage.probe import ClockReading, DatabaseProbe

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
KEY = "sk-doctor-0123456789abcdef"


def test_the_webhook_against_the_configured_mode() -> None:
    assert webhook_line(None, "", 0, None, NOW).mark is Mark.OK
    assert webhook_line(None, "https://x.example/telegram", 0, None, NOW).mark is Mark.FAIL
    good = webhook_line("https://bot.example/", "https://bot.example/telegram", 3, None, NOW)
    assert good.mark is Mark.OK and "3 update(s) pending" in good.text
    wrong = webhook_line("https://bot.example", "https://old.example/telegram", 0, None, NOW)
    assert wrong.mark is Mark.FAIL and "expects https://bot.example/telegram" in wrong.text
    none = webhook_line("https://bot.example", "", 0, None, NOW)
    assert none.mark is Mark.FAIL and "no webhook (long polling)" in none.text
    recent = (NOW - timedelta(minutes=5), "Connection refused")
    failing = webhook_line("https://bot.example", "https://bot.example/telegram", 9, recent, NOW)
    assert failing.mark is Mark.FAIL and "Connection refused" in failing.text
    old = (NOW - timedelta(days=2), "Connection refused")
    assert webhook_line("https://b.example", "https://b.example/telegram", 0, old, NOW).mark is (
        Mark.OK
    )


def test_staff_ids() -> None:
    assert staff_id_lines(frozenset(), None, {})[0].mark is Mark.FAIL
    group = staff_id_lines(frozenset({-1001234}), None, {})[0]
    assert group.mark is Mark.FAIL and "STEPWISE_STAFF_CHAT_ID" in group.text
    outside = staff_id_lines(frozenset({1, 2}), -100, {1: "creator", 2: "left"})[0]
    assert outside.mark is Mark.FAIL and outside.text.startswith("2 not in the staff group")
    assert staff_id_lines(frozenset({1, 2}), None, {})[0].mark is Mark.OK


def _probe(offset_s: float, round_trip_s: float = 0.01) -> DatabaseProbe:
    local = NOW.timestamp()
    server = datetime.fromtimestamp(local + round_trip_s / 2 + offset_s, UTC)
    reading = ClockReading(server, local, local + round_trip_s)
    return DatabaseProbe("postgresql", "postgresql://db", True, 5, 5, None, reading)


def test_the_clock_within_a_second() -> None:
    assert clock_line(_probe(0.2)).mark is Mark.OK
    ahead = clock_line(_probe(1.6))
    assert ahead.mark is Mark.FAIL and "1.6 s ahead of" in ahead.text
    assert "behind" in clock_line(_probe(-3.0)).text
    # A slow round trip is no proof of skew: 1.2 s off, give or take 0.5 s, passes.
    assert clock_line(_probe(1.2, round_trip_s=1.0)).mark is Mark.OK
    assert clock_line(None).mark is Mark.SKIP


def _model_settings() -> Settings:
    return Settings(
        planner="model",
        llm_base_url="http://llm.test/v1",
        llm_model="tiny",
        llm_api_key=SecretStr(KEY),
        _env_file=None,  # type: ignore[call-arg]
    )


async def test_the_model_endpoint_lists_the_model() -> None:
    seen: list[httpx.Request] = []

    def answer(models: list[str], status: int = 200) -> httpx.MockTransport:
        def handle(request: httpx.Request) -> httpx.Response:
            seen.append(request)
            return httpx.Response(status, json={"data": [{"id": m} for m in models]})

        return httpx.MockTransport(handle)

    settings = _model_settings()
    async with httpx.AsyncClient(transport=answer(["tiny", "big"])) as client:
        line = await model_line(settings, client=client)
    assert line.mark is Mark.OK and "lists tiny" in line.text
    assert seen[0].url == "http://llm.test/v1/models"
    assert seen[0].headers["authorization"] == f"Bearer {KEY}"
    async with httpx.AsyncClient(transport=answer(["big"])) as client:
        assert (await model_line(settings, client=client)).mark is Mark.FAIL
    async with httpx.AsyncClient(transport=answer([], 401)) as client:
        refused = await model_line(settings, client=client)
    assert refused.mark is Mark.FAIL and "STEPWISE_LLM_API_KEY" in refused.text
    assert KEY not in refused.text
    rule = Settings(_env_file=None)  # type: ignore[call-arg]
    assert (await model_line(rule)).mark is Mark.SKIP


def test_the_redactor_removes_every_secret_whole_or_in_part() -> None:
    token = "123456789:" + "A" * 35
    settings = Settings(
        telegram_bot_token=SecretStr(token),
        llm_api_key=SecretStr(KEY),
        db_path="postgresql://u:hunter2pass@db:5432/x",
        _env_file=None,  # type: ignore[call-arg]
    )
    redact = Redactor(settings)
    text = redact(f"{token} {'A' * 35} {KEY} hunter2pass")
    assert text == "[REDACTED] [REDACTED] [REDACTED] [REDACTED]"


def test_recognition_names_its_backend_and_what_is_wrong_with_it() -> None:
    """STEPWISE_EMBEDDINGS: the local model embeds; none is said, never silent; an
    endpoint that does not answer fails with what to check (the local model answers
    meanwhile)."""
    local = recognition_line(Settings(_env_file=None))  # type: ignore[call-arg]
    assert local.mark is Mark.OK and "use-multilingual-v3" in local.render()
    none = recognition_line(Settings(_env_file=None, STEPWISE_EMBEDDINGS="none"))  # type: ignore[call-arg]
    assert none.mark is Mark.SKIP and "words alone" in none.render()
    down = recognition_line(
        Settings(  # type: ignore[call-arg]
            _env_file=None,
            STEPWISE_EMBEDDINGS="endpoint",
            STEPWISE_EMBEDDINGS_URL="http://127.0.0.1:9/v1",
            STEPWISE_EMBEDDINGS_MODEL="e5",
            STEPWISE_EMBEDDINGS_TIMEOUT="1",
        )
    )
    assert down.mark is Mark.FAIL and "STEPWISE_EMBEDDINGS_URL" in down.render()
