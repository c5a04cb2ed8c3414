"""`stepwise` as a person (or a script) uses it: real processes on a real database file.

Includes the crash tests: a process is SIGKILLed between "step recorded running" and
"result recorded", restarted, and the side effects are counted in the shop's ledger.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stepwise.serve import START_RETRY_DELAYS_S
from tests.harness import query, until_sync

DEMO_USER = "10001"


def env_for(db: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))}
    env["STEPWISE_DB"] = str(db)
    env.update(extra)
    return env


def stepwise(db: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stepwise", *args],
        env=env_for(db, **extra),
        capture_output=True,
        text=True,
        timeout=60,
    )


def ask_json(db: Path, text: str, user: str = DEMO_USER) -> tuple[int, dict[str, Any]]:
    proc = stepwise(db, "ask", text, "--user", user, "--json")
    assert proc.stderr == "", proc.stderr
    return proc.returncode, json.loads(proc.stdout)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "stepwise.db"


def test_the_readme_example_works(db: Path) -> None:
    code, out = ask_json(db, "帮我查一下订单 A1001 的物流，如果还没送达，再看一下售后政策")
    assert code == 0
    assert out["status"] == "completed" and out["language"] == "zh"
    assert [s["tool"] for s in out["steps"]] == ["get_order_status", "search_policy"]
    assert [s["status"] for s in out["steps"]] == ["done", "done"]
    assert out["steps"][0]["observation"]["status"] == "shipping"
    assert set(out) == {
        "run_id",
        "trace_id",
        "status",
        "language",
        "answer",
        "steps",
        *("clarify", "unsupported", "handoff"),  # issue 13
    }
    assert set(out["steps"][0]) == {
        "id", "goal", "tool", "args", "status", "observation", "error",
        "skip_reason", "fallback_reason", "retry_count",
    }  # fmt: skip
    assert "运输中" in out["answer"]


def test_delivered_order_skips_the_compensation_step(db: Path) -> None:
    code, out = ask_json(db, "订单 A1002 如果还没送到，帮我看看延迟补偿")
    assert code == 0
    assert [s["status"] for s in out["steps"]] == ["done", "skipped"]
    assert "已签收" in out["steps"][1]["skip_reason"]


def test_failures_exit_1_and_explain(db: Path) -> None:
    code, out = ask_json(db, "where is order Z9999?")
    assert code == 1 and out["status"] == "failed"
    assert out["steps"][0]["error"]["type"] == "not_found"
    assert "couldn't find order Z9999" in out["answer"]


def test_someone_elses_order_is_refused_without_leaking_it(db: Path) -> None:
    code, out = ask_json(db, "where is order B2001?")
    assert code == 1
    assert out["steps"][0]["error"]["type"] == "permission_denied"
    assert out["steps"][0]["observation"] is None
    assert "shipping" not in out["answer"] and "on its way" not in out["answer"]


def test_bad_usage_exits_2(db: Path) -> None:
    assert stepwise(db, "ask", "hi").returncode == 2  # --user missing
    assert stepwise(db, "ask", "x" * 5000, "--user", "1").returncode == 2
    bad = stepwise(db, "runs", STEPWISE_APPROVAL_TTL="soon")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_pause_confirm_then_double_confirm(db: Path) -> None:
    code, out = ask_json(db, "帮我取消订单 A1003")
    assert code == 0 and out["status"] == "paused"
    run_id = out["run_id"]
    assert [s["status"] for s in out["steps"]] == ["done", "paused"]

    human = stepwise(db, "show", run_id)
    assert "⏸" in human.stdout

    other = stepwise(db, "confirm", run_id, "--user", "20002")
    assert other.returncode == 3 and "another customer" in other.stderr

    done = stepwise(db, "confirm", run_id, "--user", DEMO_USER, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "completed"
    assert [s["status"] for s in result["steps"]] == ["done", "done"]

    again = stepwise(db, "confirm", run_id, "--user", DEMO_USER)
    assert again.returncode == 3 and "already handled" in again.stderr
    assert query(db, "SELECT count(*) FROM shop_cancellations") == [(1,)]
    assert query(db, "SELECT status FROM shop_orders WHERE id = 'A1003'") == [("cancelled",)]


@pytest.mark.parametrize("text", ["cancel it", "帮我取消这个订单"])
def test_an_action_on_it_after_two_orders_asks_which_with_both(db: Path, text: str) -> None:
    """Each `ask` of the same user keeps the chat's orders: "it" is not the first alone."""
    code, _ = ask_json(db, "where are A1007 and A1003?")
    assert code == 0
    code, out = ask_json(db, text)
    assert code == 0 and out["status"] == "needs_clarification" and out["steps"] == []
    assert [o["label"] for o in out["clarify"]["options"]] == ["A1007", "A1003"]
    picked = out["clarify"]["options"][1]["text"]
    code, chosen = ask_json(db, picked)
    assert code == 0 and chosen["status"] == "paused"
    assert [(s["tool"], s["args"]) for s in chosen["steps"]][-1] == (
        "cancel_order",
        {"order_id": "A1003"},
    )
    assert query(db, "SELECT count(*) FROM shop_cancellations") == [(0,)]


@pytest.mark.parametrize("text", ["cancel order A1003", "帮我取消订单 A1003"])
def test_a_paused_answer_in_json_names_the_command_not_a_button(db: Path, text: str) -> None:
    code, out = ask_json(db, text)
    assert code == 0 and out["status"] == "paused"
    assert "below" not in out["answer"] and "下方" not in out["answer"]
    assert "stepwise confirm" in out["answer"] and "stepwise reject" in out["answer"]
    stored = query(db, "SELECT answer FROM runs WHERE id = ?", out["run_id"])[0][0]
    assert "below" in stored or "下方" in stored  # the chat's copy keeps its buttons' hint


def test_reject_changes_nothing(db: Path) -> None:
    _, out = ask_json(db, "cancel order A1001")
    proc = stepwise(db, "reject", out["run_id"], "--user", DEMO_USER, "--json")
    assert proc.returncode == 0
    result = json.loads(proc.stdout)
    assert result["status"] == "declined"
    assert "Nothing was changed" in result["answer"]
    assert query(db, "SELECT status FROM shop_orders WHERE id = 'A1001'") == [("shipping",)]
    assert query(db, "SELECT count(*) FROM shop_cancellations") == [(0,)]


def test_concurrent_confirms_from_two_processes_cancel_once(db: Path) -> None:
    _, out = ask_json(db, "cancel order A1005")
    run_id = out["run_id"]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "stepwise", "confirm", run_id, "--user", DEMO_USER],
            env=env_for(db),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    codes = sorted(p.wait(timeout=60) for p in procs)
    for p in procs:
        p.communicate()
    assert codes == [0, 3, 3]
    assert query(db, "SELECT count(*) FROM shop_cancellations WHERE order_id = 'A1005'") == [(1,)]


def test_sigkill_after_the_side_effect_recovers_without_doing_it_twice(db: Path) -> None:
    _, out = ask_json(db, "cancel order A1003")
    run_id = out["run_id"]
    # A slow shop: the cancellation commits, then the answer takes long to come back.
    proc = subprocess.Popen(
        [sys.executable, "-m", "stepwise", "confirm", run_id, "--user", DEMO_USER],
        env=env_for(db, STEPWISE_SHOP_LATENCY_MS="30000"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        until_sync(lambda: query(db, "SELECT count(*) FROM shop_cancellations") == [(1,)])
        assert query(db, "SELECT status FROM steps WHERE run_id = ? AND id = 's2'", run_id) == [
            ("running",)
        ]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)

    recovered = stepwise(db, "recover")
    assert recovered.returncode == 0, recovered.stderr
    assert f"{run_id}  completed" in recovered.stdout
    assert query(db, "SELECT status FROM runs WHERE id = ?", run_id) == [("completed",)]
    assert query(db, "SELECT count(*) FROM steps WHERE status = 'running'") == [(0,)]
    assert query(db, "SELECT count(*) FROM shop_cancellations") == [(1,)]
    starts = query(
        db, "SELECT count(*) FROM events WHERE run_id = ? AND kind = 'step_started'", run_id
    )
    assert starts == [(3,)]  # status once, cancel twice (crash + recovery), one cancellation


def test_sigkill_during_a_read_step_reruns_it(db: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "stepwise", "ask", "where is order A1001", "--user", DEMO_USER],
        env=env_for(db, STEPWISE_SHOP_LATENCY_MS="30000"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        until_sync(
            lambda: (
                db.exists()
                and query(db, "SELECT count(*) FROM steps WHERE status = 'running'") == [(1,)]
            )
        )
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    assert stepwise(db, "recover").returncode == 0
    assert query(db, "SELECT status FROM runs") == [("completed",)]
    assert query(db, "SELECT status FROM steps") == [("done",)]


def test_paused_run_survives_a_restart(db: Path) -> None:
    _, out = ask_json(db, "cancel order A1001")
    # Every command is a fresh process: the pause lived only in the database.
    assert stepwise(db, "recover").stdout.strip() == "recovered 0 run(s)"
    proc = stepwise(db, "confirm", out["run_id"], "--user", DEMO_USER, "--json")
    assert json.loads(proc.stdout)["status"] == "completed"


def test_expired_pause_runs_nothing(db: Path) -> None:
    _, out = ask_json(db, "cancel order A1001")
    proc = stepwise(db, "confirm", out["run_id"], "--user", DEMO_USER, "--json",
                    STEPWISE_APPROVAL_TTL="0s")  # fmt: skip
    assert proc.returncode == 1
    result = json.loads(proc.stdout)
    assert result["status"] == "expired"
    assert "expired" in result["answer"]
    assert query(db, "SELECT count(*) FROM shop_cancellations") == [(0,)]


def test_locked_database_gives_a_clear_error_and_writes_nothing(db: Path) -> None:
    assert stepwise(db, "runs").returncode == 0  # create the file and schema
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        proc = stepwise(db, "ask", "where is A1001", "--user", DEMO_USER,
                        STEPWISE_DB_TIMEOUT="0.2")  # fmt: skip
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert proc.returncode == 4
    assert "storage unavailable" in proc.stderr and proc.stderr.count("\n") == 1
    assert query(db, "SELECT count(*) FROM runs") == [(0,)]


def test_runs_show_and_export(db: Path) -> None:
    ask_json(db, "where is order A1001")
    ask_json(db, "where is order Z1234")
    listed = json.loads(stepwise(db, "runs", "--json").stdout)
    assert [r["status"] for r in listed] == ["failed", "completed"]
    failed = stepwise(db, "runs", "--status", "failed").stdout
    assert "Z1234" in failed and "A1001" not in failed

    exported = stepwise(db, "export", "--status", "failed").stdout.splitlines()
    assert len(exported) == 1
    case = json.loads(exported[0])
    assert case["request_text"] == "where is order Z1234"
    assert [e["kind"] for e in case["timeline"]][-1] == "run_finished"

    shown = stepwise(db, "show", listed[0]["id"])
    assert "error=not_found" in shown.stdout and "decision=stop" in shown.stdout
    assert stepwise(db, "show", "nope").returncode == 3


# -- start-up failures: one line, the right exit code, no traceback (issue 11 #18) ----------

TOKEN_ENV = {
    "TELEGRAM_BOT_TOKEN": "123456789:AAStandInTokenForLocalTests_0123456789",
    "TELEGRAM_API_BASE_URL": "http://127.0.0.1:9/bot",  # nothing listens on the discard port
}


@pytest.mark.parametrize(
    "kind", ["missing directory", "a directory", "/proc", "in /proc", "not sqlite"]
)
def test_18_a_bad_stepwise_db_is_a_configuration_mistake(tmp_path: Path, kind: str) -> None:
    bad = {
        "missing directory": tmp_path / "no" / "such" / "dir" / "stepwise.db",
        "a directory": tmp_path,
        "/proc": Path("/proc"),
        "in /proc": Path("/proc/stepwise.db"),
        "not sqlite": tmp_path / "notes.txt",
    }[kind]
    if kind == "not sqlite":
        bad.write_text("these are my notes, not a database\n")
    for args in (
        ("runs",),
        ("ask", "where is A1001", "--user", DEMO_USER),
        ("recover",),
        ("serve",),
    ):
        proc = stepwise(bad, *args, **TOKEN_ENV)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.count("\n") == 1 and "STEPWISE_DB" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and "try again" not in proc.stderr
    assert not (tmp_path / "no").exists()


def test_18_telegram_unreachable_at_start_retries_a_few_times_then_exits_with_one_line(
    db: Path,
) -> None:
    proc = stepwise(db, "serve", "--staff-port", "0", **TOKEN_ENV)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 4, proc.stderr
    assert "Traceback" not in proc.stderr
    retries, final = lines[:-1], lines[-1]
    assert len(retries) == len(START_RETRY_DELAYS_S) and len(lines) == len(set(lines))
    assert all("cannot reach Telegram" in line and "retrying in" in line for line in retries)
    assert (
        "Telegram" in final
        and "giving up" in final
        and TOKEN_ENV["TELEGRAM_BOT_TOKEN"] not in proc.stderr
    )


# -- the README a new user follows (issue 11 #20) -------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
# The docs/ pages hold what moved out of the README (issue 34 item 5): its examples too.
DOCS = [README, *(page.read_text(encoding="utf-8") for page in sorted(ROOT.glob("docs/*.md")))]


def _example_lines() -> list[str]:
    """The README's and the docs' command examples: every line of their fenced code blocks."""
    fenced = [block for doc in DOCS for block in re.findall(r"```[a-z]*\n(.*?)```", doc, re.S)]
    return [line.strip() for block in fenced for line in block.splitlines()]


def test_20_every_cli_example_runs_from_a_path_that_exists_after_make_run() -> None:
    # (not the demo's own banner, "stepwise demo — the real bot...", which the README shows)
    command = r"(\S*/)?stepwise [a-z]+\b(?! —)"
    commands = [line for line in _example_lines() if re.match(command, line)]
    assert len(commands) >= 12
    assert [c for c in commands if not c.startswith(".venv/bin/stepwise ")] == []
    webhook = re.search(r"`([^`]*--webhook-url[^`]*)`", README)
    assert webhook is not None and webhook[1].startswith(".venv/bin/stepwise serve ")


def test_20_readme_answers_a_new_users_questions() -> None:
    # Where STEPWISE_STAFF_IDS comes from: your numeric Telegram user id, found two ways.
    staff = README[README.index("Your Telegram user id") :][:1200]
    assert "@userinfobot" in staff and ".venv/bin/stepwise runs" in staff
    # How make run takes the demo's and the bot's flags.
    assert 'make run ARGS="--chat-port 9000 --staff-port 9001"' in README
    # Fonts a headless browser needs to show Chinese and emoji.
    assert "fonts-noto-cjk" in README and "fonts-noto-color-emoji" in README
