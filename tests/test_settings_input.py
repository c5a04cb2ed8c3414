"""Bad input as people write it, at every door: settings (the environment and `.env`), the
command line's ids, the tools file (issue 20 item 7).

Everything here goes through the real parsing: `stepwise` as a subprocess with the
variables in its environment or in a `.env` file in its working directory, or
`stepwise.cli.main` in this process with the variables set in `os.environ` (what
pydantic-settings reads). A bad value is one line on stderr naming it, exit code 2, and
never a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_core.ids import MAX_ID, BadId, telegram_id
from stepwise.cli import main
from stepwise.settings import Settings, env_name
from tests.test_cli import stepwise

STAFF = "111111111,222222222"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No STEPWISE_/TELEGRAM_ variable in this process, and a working directory without a
    `.env`; returns the database path the commands may use."""
    for name in list(os.environ):
        if name.startswith(("STEPWISE_", "TELEGRAM_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "stepwise.db"
    monkeypatch.setenv("STEPWISE_DB", str(db))
    return db


def one_line_exit_2(proc: subprocess.CompletedProcess[str], name: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("stepwise: "), proc.stderr
    assert name in proc.stderr, proc.stderr


# -- STEPWISE_STAFF_IDS as people write it --------------------------------------------------

PEOPLES_LISTS = {
    "111111111,222222222": {111111111, 222222222},
    "111111111 222222222": {111111111, 222222222},
    "111111111, 222222222": {111111111, 222222222},
    " 111111111 ,222222222 ": {111111111, 222222222},
    "[111111111,222222222]": {111111111, 222222222},
    "[111111111, 222222222]": {111111111, 222222222},
    "111111111": {111111111},
    "": set(),
    "   ": set(),
}


@pytest.mark.parametrize("written", list(PEOPLES_LISTS))
def test_staff_ids_from_the_environment_as_people_write_them(
    written: str, clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEPWISE_STAFF_IDS", written)
    assert Settings().staff_ids == PEOPLES_LISTS[written]


@pytest.mark.parametrize("written", ["111111111,222222222", "111111111 222222222", ""])
def test_staff_ids_from_a_dotenv_file_as_people_write_them(
    written: str, clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STEPWISE_DB")
    (clean_env.parent / ".env").write_text(f"STEPWISE_STAFF_IDS={written}\n")
    assert Settings().staff_ids == PEOPLES_LISTS[written]


def test_every_command_starts_with_the_comma_form_in_the_environment(db: Path) -> None:
    for args in (("runs",), ("recover",), ("ask", "where is A1001", "--user", "10001")):
        for written in (STAFF, ""):
            proc = stepwise(db, *args, STEPWISE_STAFF_IDS=written)
            assert proc.returncode == 0, (args, written, proc.stderr)
            assert proc.stderr == "", proc.stderr


def test_the_comma_form_in_a_dotenv_file_in_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(
        f"STEPWISE_DB={tmp_path / 'stepwise.db'}\nSTEPWISE_STAFF_IDS={STAFF}\n"
        "STEPWISE_STAFF_FOUR_EYES_ABOVE=100\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "stepwise", "runs"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (proc.returncode, proc.stderr, proc.stdout) == (0, "", "no runs\n")
    # The .env was read: its database is the one the command opened.
    assert (tmp_path / "stepwise.db").exists()


def test_a_bad_value_in_a_dotenv_file_is_one_line_too(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(
        f"STEPWISE_DB={tmp_path / 'stepwise.db'}\nSTEPWISE_DB_TIMEOUT=inf\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "stepwise", "runs"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    one_line_exit_2(proc, "STEPWISE_DB_TIMEOUT")


def test_a_dotenv_file_that_is_not_utf8_is_one_line(clean_env: Path) -> None:
    (clean_env.parent / ".env").write_bytes(b"STEPWISE_DB=\xff\xfe.db\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "stepwise", "runs"],
        env=env,
        cwd=clean_env.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    one_line_exit_2(proc, ".env")


# -- every setting, fed what people write by mistake ----------------------------------------

NUMBER = ["", "   ", "-1", "99999999999999999999", "inf", "-inf", "nan", "1e999", "five", "5 s"]
DURATION = ["", "   ", "-1", "-1h", "99999999999d", "31d", "inf", "nan", "1e999", "soon", "5 x"]
ID = ["0", "-1", "99999999999999999999", str(2**64), str(MAX_ID + 1), "inf", "nan", "1.5", "abc"]
AMOUNT = ["-1", "99999999999999999999", "inf", "-inf", "nan", "Infinity", "NaN", "1e999", "ten"]
URL = ["garbage", "-1", "http://", "ftp://example.com", "https://example.com:99999"]
BAD_VALUES: dict[str, list[str]] = {
    "STEPWISE_DB": ["", "   "],
    "STEPWISE_DB_TIMEOUT": [*NUMBER, "0"],
    "STEPWISE_LLM_TIMEOUT": [*NUMBER, "0", "601"],
    "STEPWISE_LEASE": [*NUMBER, "0", "0.1", "61"],
    "STEPWISE_SHUTDOWN_DEADLINE": [*NUMBER, "0", "601"],
    "STEPWISE_SHOP_LATENCY_MS": [*NUMBER, "1.5", "600001"],
    "STEPWISE_APPROVAL_TTL": DURATION,
    "STEPWISE_INBOX_KEEP": [*DURATION, "0", "0s"],
    "STEPWISE_STAFF_APPROVAL_ABOVE": AMOUNT,
    "STEPWISE_STAFF_FOUR_EYES_ABOVE": AMOUNT,
    "STEPWISE_STAFF_IDS": [*ID, "111;222", "[1,", "[1, 2.5]", '{"a": 1}', "111,abc"],
    "STEPWISE_STAFF_CHAT_ID": [i for i in ID if i != "-1"] + [str(-(2**64)), str(-MAX_ID - 1)],
    "STEPWISE_DEMO_USER": ["", "   ", *ID],
    "STEPWISE_ORDER_PATTERN": ["", "   ", "(", "[", "a{2,1}", r"\d*", r"(?i)A\d+", "(?u)x"],
    "STEPWISE_PLANNER": ["", "   ", "garbage", "-1"],
    "STEPWISE_EMBEDDINGS": ["", "   ", "garbage", "lexical", "-1"],
    "STEPWISE_EMBEDDINGS_TIMEOUT": [*NUMBER, "0", "601"],
    "STEPWISE_EMBEDDINGS_URL": URL,
    "TELEGRAM_API_BASE_URL": ["", "   ", *URL],
    "STEPWISE_CONSOLE_URL": URL,
    "STEPWISE_LLM_BASE_URL": URL,
    "STEPWISE_WEBHOOK_URL": URL,
    "STEPWISE_HEALTH_PORT": [*NUMBER, "1.5", "65536"],
    "STEPWISE_HEALTH_LISTEN": ["", "   ", "garbage!", "127.0.0.1:9000", "http://0.0.0.0", "-x"],
    "STEPWISE_HEALTH_ON_WEBHOOK": ["", "   ", "maybe", "2", "-1"],
    "STEPWISE_CHAT_QUEUE_MAX": [*NUMBER, "0", "1.5", "10001"],
    "STEPWISE_READY_BACKLOG_MAX": [*NUMBER, "0", "1.5", "10000001"],
    "STEPWISE_LOG_FORMAT": ["", "   ", "xml"],
    "STEPWISE_LOG_LEVEL": ["", "   ", "LOUD", "-1"],
}
# Settings no bad value can reach: free text (a path, a model's name) or secrets, whose
# shape is checked where they are used and whose value is never echoed.
NOT_IN_THE_TABLE = {
    "TELEGRAM_BOT_TOKEN",
    "STEPWISE_STAFF_TOKEN",
    "STEPWISE_LLM_API_KEY",
    "STEPWISE_WEBHOOK_SECRET",
    "STEPWISE_LLM_MODEL",
    "STEPWISE_TOOLS",
    "STEPWISE_SHOP_SEED",
    "STEPWISE_INTENTS",
    "STEPWISE_EMBEDDINGS_MODEL",
    "STEPWISE_EMBEDDINGS_API_KEY",
    "STEPWISE_EMBEDDINGS_CACHE",
}
CASES = [(name, value) for name, values in BAD_VALUES.items() for value in values]


def test_every_setting_is_fed_bad_values_or_said_why_not() -> None:
    every = {env_name(field) for field in Settings.model_fields}
    assert every == set(BAD_VALUES) | NOT_IN_THE_TABLE, every ^ (set(BAD_VALUES) | NOT_IN_THE_TABLE)


@pytest.mark.parametrize(("name", "value"), CASES, ids=[f"{n}={v!r}" for n, v in CASES])
def test_every_bad_setting_is_one_line_naming_it_and_exit_2(
    name: str,
    value: str,
    clean_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(name, value)
    assert main(["runs"]) == 2  # an exception (a traceback) fails the test by itself
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("stepwise: "), err
    assert name in err, err
    assert not clean_env.exists()  # refused before anything was opened


@pytest.mark.parametrize(
    ("name", "value", "field", "expected"),
    [
        ("STEPWISE_DB_TIMEOUT", " 7 ", "db_timeout_s", 7.0),
        ("STEPWISE_LEASE", "0.3", "lease_s", 0.3),
        ("STEPWISE_APPROVAL_TTL", "0s", "approval_ttl", 0.0),
        ("STEPWISE_APPROVAL_TTL", " 90m ", "approval_ttl", 5400.0),
        ("STEPWISE_APPROVAL_TTL", "30d", "approval_ttl", 30 * 86400.0),
        ("STEPWISE_INBOX_KEEP", "2h", "inbox_keep", 7200.0),
        ("STEPWISE_DEMO_USER", str(MAX_ID), "demo_user_id", MAX_ID),
        ("STEPWISE_STAFF_CHAT_ID", "-1001234567890", "staff_chat_id", -1001234567890),
        ("STEPWISE_STAFF_CHAT_ID", str(-MAX_ID), "staff_chat_id", -MAX_ID),
        ("STEPWISE_STAFF_CHAT_ID", "", "staff_chat_id", None),
        ("STEPWISE_STAFF_APPROVAL_ABOVE", "", "staff_approval_above", None),
        ("STEPWISE_TOOLS", "", "tools_path", None),
        ("TELEGRAM_BOT_TOKEN", "", "telegram_bot_token", None),
        ("STEPWISE_ORDER_PATTERN", r"ORD-\d{6}", "order_pattern", r"ORD-\d{6}"),
    ],
)
def test_good_values_as_people_write_them_still_load(
    name: str,
    value: str,
    field: str,
    expected: object,
    clean_env: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(name, value)
    got = getattr(Settings(), field)
    assert (got.total_seconds() if field in ("approval_ttl", "inbox_keep") else got) == expected


def test_a_secret_is_never_echoed_in_the_error_line(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STEPWISE_LLM_API_KEY", "sk-secret-\udcff-key")  # not UTF-8
    assert main(["runs"]) == 2
    err = capsys.readouterr().err
    assert "STEPWISE_LLM_API_KEY" in err and "sk-secret" not in err


# -- the defects of the issue, from every command, as a subprocess --------------------------

DEFECTS = [
    ("STEPWISE_ORDER_PATTERN", "("),
    ("STEPWISE_APPROVAL_TTL", "99999999999d"),
    ("STEPWISE_DB_TIMEOUT", "inf"),
    ("STEPWISE_STAFF_IDS", "111111111;222222222"),
    ("STEPWISE_DEMO_USER", str(2**64)),
]
COMMANDS = [
    ("run",),
    ("serve",),
    ("demo",),
    ("ask", "where is A1001", "--user", "10001"),
    ("confirm", "r1", "--user", "10001"),
    ("reject", "r1", "--user", "10001"),
    ("runs",),
    ("show", "r1"),
    ("export",),
    ("recover",),
    ("migrate",),
    ("chat",),
    ("eval",),
    ("tools",),
]


@pytest.mark.parametrize("args", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_every_command_refuses_a_bad_setting_in_one_line(args: tuple[str, ...], db: Path) -> None:
    # One defect per command (each process costs half a second), every defect at least twice.
    index = COMMANDS.index(args)
    for name, value in (DEFECTS[index % len(DEFECTS)], DEFECTS[(index + 2) % len(DEFECTS)]):
        proc = stepwise(db, *args, **{name: value})
        one_line_exit_2(proc, name)
    assert not db.exists()


# -- ids on the command line ----------------------------------------------------------------

BAD_USER = [str(2**64), "99999999999999999999999", str(MAX_ID + 1), "0", "-5", "abc", "1.5", ""]


USER_COMMANDS = [
    ("runs", "--user"),
    ("ask", "where is A1001", "--user"),
    ("confirm", "r1", "--user"),
    ("reject", "r1", "--user"),
    ("export", "--user"),
    ("chat", "--user"),
]


@pytest.mark.parametrize("user", BAD_USER)
def test_a_user_id_no_telegram_account_has_is_one_line_from_every_command(
    user: str, db: Path
) -> None:
    # `runs`, and one other command in turn (each process costs half a second).
    turn = USER_COMMANDS[1 + BAD_USER.index(user) % (len(USER_COMMANDS) - 1)]
    for args in (USER_COMMANDS[0], turn):
        proc = stepwise(db, *args, user)
        one_line_exit_2(proc, "--user")
        assert "Telegram user id" in proc.stderr
    assert not db.exists()


def test_a_bad_chat_id_is_one_line_and_good_ids_at_the_limits_work(db: Path) -> None:
    for chat in ("0", str(2**64), str(-(2**64)), "x"):
        proc = stepwise(db, "ask", "where is A1001", "--user", "10001", "--chat", chat)
        one_line_exit_2(proc, "--chat")
    assert not db.exists()
    # The largest ids Telegram can give, and a supergroup's, are taken as they are.
    assert stepwise(db, "runs", "--user", str(MAX_ID)).stdout == "no runs\n"
    proc = stepwise(db, "ask", "where is A1003", "--user", str(MAX_ID), "--chat", "-1001234567890")
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr  # another customer's order
    listed = stepwise(db, "runs", "--user", str(MAX_ID)).stdout
    assert f"user {MAX_ID}" in listed


def test_the_one_id_validator() -> None:
    assert telegram_id(" 42 ") == 42 and telegram_id(MAX_ID) == MAX_ID
    assert telegram_id("-1001234567890", "chat") == -1001234567890
    assert telegram_id(-MAX_ID, "chat") == -MAX_ID
    for bad in (0, -1, MAX_ID + 1, True, 1.0, "1e3", "", "٣", "+", "1" * 40, None):
        with pytest.raises(BadId):
            telegram_id(bad)
    for bad_chat in (0, MAX_ID + 1, -MAX_ID - 1, "--5"):
        with pytest.raises(BadId):
            telegram_id(bad_chat, "chat")


def test_a_port_out_of_range_is_a_usage_error_not_a_traceback(db: Path) -> None:
    for args in (("demo", "--staff-port", "99999"), ("serve", "--port", "-1")):
        proc = stepwise(db, *args)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert "is not a port (0-65535)" in proc.stderr
    assert not db.exists()


def test_a_shop_seed_that_cannot_be_used_is_one_line_naming_it(db: Path, tmp_path: Path) -> None:
    seed = json.loads((ROOT / "storage" / "shop" / "seed.json").read_text(encoding="utf-8"))
    seed["orders"][0]["owner_user_id"] = 2**64  # an id no Telegram account has
    too_big = tmp_path / "big.json"
    too_big.write_text(json.dumps(seed))
    not_utf8 = tmp_path / "bytes.json"
    not_utf8.write_bytes(b'{"orders": "\xff"}')
    for path in (too_big, not_utf8, tmp_path / "missing.json"):
        proc = stepwise(
            db, "ask", "where is A1001", "--user", "10001", STEPWISE_SHOP_SEED=str(path)
        )
        one_line_exit_2(proc, "STEPWISE_SHOP_SEED")
        assert path.name in proc.stderr
    assert "Telegram user id" in stepwise(db, "runs", STEPWISE_SHOP_SEED=str(too_big)).stderr


# -- the tools file -------------------------------------------------------------------------


def test_a_tools_file_that_is_not_utf8_is_one_line(db: Path, tmp_path: Path) -> None:
    tools = tmp_path / "tools.toml"
    tools.write_bytes(b'[tools.get_order_status]\nurl = "https://shop.example/\xff"\n')
    for args in (("ask", "where is A1001", "--user", "10001"), ("runs",)):
        proc = stepwise(db, *args, STEPWISE_TOOLS=str(tools))
        one_line_exit_2(proc, "tools.toml")
        assert "UTF-8" in proc.stderr
    checked = stepwise(db, "tools", "check", STEPWISE_TOOLS=str(tools))
    assert checked.returncode == 2 and "Traceback" not in checked.stderr
    assert "UTF-8" in checked.stdout


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "stepwise.db"
