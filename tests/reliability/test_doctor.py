"""`stepwise doctor` as an operator runs it (issue 25 item 4): a real subprocess, its
settings from the environment, against the Bot API stand-in and a real database.

A good deployment passes every check (exit 0); a broken one (the bot without rights in
the staff group, a webhook this deployment does not expect, a database that cannot be)
says so in one ✘ line each, exits 1 and prints no traceback and no secret.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from standin import StandIn
from tests.storage_backends import PG_URL, fresh_schema, with_search_path

from .conftest import STAFF, TOKEN, stepwise

FORUM = -1007777777777
PG_PASSWORD = "pg-pass-4d1f0c9b7e"  # in a URL doctor must never print


def forum(standin: StandIn, *, rights: bool = True) -> None:
    standin.add_chat(FORUM, STAFF, title="Support staff", is_forum=True, first_name="Sam")
    if rights:
        standin.set_bot_rights(FORUM, can_manage_topics=True)


def lines_of(out: str) -> dict[str, str]:
    """'✔ name: text' lines by name, each value starting with its mark."""
    found = {}
    for line in out.splitlines():
        mark, _, rest = line.partition(" ")
        name, sep, text = rest.partition(": ")
        if mark in ("✔", "✘", "–") and sep:
            found[name] = f"{mark} {text}"
    return found


def assert_clean(out: str, err: str) -> None:
    """No traceback, no secret, not even in part."""
    both = out + err
    assert "Traceback" not in both, both
    secret = TOKEN.partition(":")[2]
    for part in (TOKEN, secret, secret[:12], secret[-12:], PG_PASSWORD):
        assert part not in both, both


async def test_a_good_deployment_passes_every_check(standin: StandIn, tmp_path: Path) -> None:
    forum(standin)
    db = tmp_path / "bot.db"
    env = {"STEPWISE_STAFF_CHAT_ID": str(FORUM), "base_url": standin.base_url}
    code, out, err = await stepwise(db, "migrate", workdir=tmp_path, **env)
    assert code == 0, err

    code, out, err = await stepwise(db, "doctor", workdir=tmp_path, **env)

    assert code == 0, out + err
    assert err == ""
    checks = lines_of(out)
    assert list(checks) == [
        "token",
        "webhook",
        "staff group",
        "staff ids",
        "database",
        "migrations",
        "database writes",
        "catalog",
        "model endpoint",
        "recognition",
        "clock",
    ]
    assert checks["token"].startswith("✔ @") and "getMe" in checks["token"]
    assert checks["recognition"].startswith("✔ by meaning: use-multilingual-v3")
    assert checks["webhook"].startswith("✔ long polling")
    assert checks["staff group"].startswith(f"✔ {FORUM}")
    assert checks["staff ids"] == "✔ 1 staff member(s) (all in the staff group)"
    assert checks["migrations"].startswith("✔ schema at version")
    assert checks["database writes"].startswith("✔")
    assert checks["model endpoint"].startswith("–")
    assert checks["clock"].startswith("– SQLite has no clock")
    assert out.splitlines()[-1].startswith("all checks passed")
    assert_clean(out, err)
    # Nothing was written: the probe's table was rolled back.
    assert "stepwise_doctor_probe" not in db.read_bytes().decode("latin-1")


async def test_a_broken_deployment_fails_one_line_per_problem(
    standin: StandIn, tmp_path: Path
) -> None:
    forum(standin, rights=False)  # the bot is a plain member of the staff group
    # Someone set a webhook this (long polling) deployment does not expect.
    async with httpx.AsyncClient() as client:
        answer = await client.post(
            f"{standin.base_url}{TOKEN}/setWebhook",
            data={"url": "https://wrong.example.com/telegram"},
        )
        assert answer.json()["ok"], answer.text
    db = tmp_path / "missing" / "bot.db"  # a directory that does not exist
    env = {"STEPWISE_STAFF_CHAT_ID": str(FORUM), "base_url": standin.base_url}

    code, out, err = await stepwise(db, "doctor", workdir=tmp_path, **env)

    assert code == 1, out + err
    checks = lines_of(out)
    assert checks["token"].startswith("✔")
    assert checks["webhook"].startswith("✘ Telegram posts updates to https://wrong.example.com")
    assert checks["staff group"].startswith(f"✘ the bot is not an admin of staff chat {FORUM}")
    assert "Manage Topics" in checks["staff group"]
    assert checks["database"].startswith("✘ STEPWISE_DB=")
    assert "does not exist" in checks["database"]
    assert checks["migrations"].startswith("–") and checks["clock"].startswith("–")
    assert out.splitlines()[-1].startswith("3 check(s) failed")
    assert not db.parent.exists()  # nothing created
    assert_clean(out, err)


async def test_a_rejected_token_and_a_malformed_one(standin: StandIn, tmp_path: Path) -> None:
    db = tmp_path / "bot.db"
    wrong = "123456789:" + "x" * 35
    code, out, err = await stepwise(
        db, "doctor", workdir=tmp_path, base_url=standin.base_url, TELEGRAM_BOT_TOKEN=wrong
    )
    assert code == 1
    assert lines_of(out)["token"].startswith("✘ Telegram (")
    assert "rejected TELEGRAM_BOT_TOKEN" in out and "x" * 35 not in out
    assert lines_of(out)["webhook"].startswith("–")
    assert_clean(out, err)

    code, out, err = await stepwise(db, "doctor", workdir=tmp_path, TELEGRAM_BOT_TOKEN="nonsense")
    assert code == 1
    assert lines_of(out)["token"] == "✘ TELEGRAM_BOT_TOKEN is malformed (expected 123456:ABC...)"
    assert "nonsense" not in out


async def test_postgresql_good_and_unreachable(standin: StandIn, tmp_path: Path) -> None:
    forum(standin)
    env = {"STEPWISE_STAFF_CHAT_ID": str(FORUM), "base_url": standin.base_url}
    with fresh_schema() as schema:
        url = with_search_path(PG_URL, schema)
        code, out, err = await stepwise(tmp_path / "unused.db", "doctor", workdir=tmp_path,
                                        STEPWISE_DB=url, **env)  # fmt: skip
        assert code == 1, out + err  # a new schema: not migrated yet
        assert lines_of(out)["migrations"].startswith("✘ schema at version 0")
        assert "`stepwise migrate`" in out

        code, _, err = await stepwise(
            tmp_path / "unused.db", "migrate", workdir=tmp_path, STEPWISE_DB=url, **env
        )
        assert code == 0, err
        code, out, err = await stepwise(tmp_path / "unused.db", "doctor", workdir=tmp_path,
                                        STEPWISE_DB=url, **env)  # fmt: skip
        assert code == 0, out + err
        checks = lines_of(out)
        assert checks["database"].startswith("✔ postgresql at postgresql://")
        assert checks["database writes"].startswith("✔")
        assert checks["clock"].startswith("✔ the database's clock is within")
        assert_clean(out, err)

    # An unreachable server (nothing listens on port 9), with a password in the URL.
    dead = f"postgresql://stepwise:{PG_PASSWORD}@127.0.0.1:9/test"
    code, out, err = await stepwise(
        tmp_path / "unused.db", "doctor", workdir=tmp_path, STEPWISE_DB=dead, **env
    )
    assert code == 1
    checks = lines_of(out)
    assert checks["database"].startswith("✘ cannot open database postgresql://stepwise@127.0.0.1:9")
    assert checks["clock"] == "– not checked: the database did not answer"
    assert_clean(out, err)
