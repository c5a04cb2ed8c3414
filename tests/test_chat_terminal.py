"""`stepwise chat` driven as a person would: a real terminal (pexpect), typing and reading."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pexpect

from tests.harness import query, until_sync


def spawn_chat(db: Path) -> pexpect.spawn:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))}
    env["STEPWISE_DB"] = str(db)
    return pexpect.spawn(
        sys.executable, ["-m", "stepwise", "chat"], env=env, encoding="utf-8", timeout=30
    )


def test_a_customer_chats_confirms_and_quits(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    chat = spawn_chat(db)
    chat.expect_exact("you are customer 10001")
    chat.expect_exact("you> ")

    chat.sendline("cancel order A1003")
    chat.expect_exact("Here is my plan:")
    chat.expect_exact("1. Check the status of order A1003")
    chat.expect_exact("✅ Check the status of order A1003 — done")
    chat.expect_exact("⏸ Cancel order A1003 — waiting for your confirmation")
    chat.expect_exact("Confirm? [y/N] ")
    chat.sendline("y")
    chat.expect_exact("✅ Cancel order A1003 — confirmed and done")
    # Issue 11 item 16: the answer states the order's latest state only.
    chat.expect_exact("bot> Order A1003 has been cancelled.")

    chat.expect_exact("you> ")
    chat.sendline("帮我查一下订单 A1002 的物流，如果还没送达，再看一下售后政策")
    chat.expect_exact("我的计划：")
    chat.expect_exact("⏭ 查询延迟补偿政策 — 订单 A1002 已签收")

    chat.expect_exact("you> ")
    chat.sendline("cancel order A1001")
    chat.expect_exact("Confirm? [y/N] ")
    chat.sendline("")  # the default is No
    chat.expect_exact("Nothing was changed.")

    chat.expect_exact("you> ")
    chat.sendeof()
    chat.expect(pexpect.EOF)
    chat.close()
    assert chat.exitstatus == 0

    with sqlite3.connect(db) as conn:
        statuses = dict(conn.execute("SELECT id, status FROM shop_orders").fetchall())
        cancellations = conn.execute("SELECT count(*) FROM shop_cancellations").fetchone()[0]
    assert statuses["A1003"] == "cancelled" and statuses["A1001"] == "shipping"
    assert cancellations == 1


# -- Ctrl-C (issue 11 #19) ----------------------------------------------------------------


def test_19_ctrl_c_during_ask_leaves_a_run_the_next_chat_finishes(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))}
    slow = {**env, "STEPWISE_DB": str(db), "STEPWISE_SHOP_LATENCY_MS": "30000"}
    ask = subprocess.Popen(
        [sys.executable, "-m", "stepwise", "ask", "where is order A1001", "--user", "10001"],
        env=slow, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    until_sync(lambda: db.exists() and query(db, "SELECT 1 FROM steps WHERE status = 'running'"))
    ask.send_signal(signal.SIGINT)  # Ctrl-C while the step is working
    _, err = ask.communicate(timeout=20)
    assert ask.returncode == 130 and "Traceback" not in err
    assert query(db, "SELECT status FROM runs") == [("running",)]

    chat = spawn_chat(db)
    chat.expect_exact("finished 1 interrupted run")
    chat.expect_exact("you> ")
    assert query(db, "SELECT status FROM runs") == [("completed",)]
    assert query(db, "SELECT count(*) FROM steps WHERE status = 'running'") == [(0,)]

    chat.sendintr()  # Ctrl-C at the prompt: the chat ends now, not at the next Enter
    chat.expect(pexpect.EOF, timeout=10)
    chat.close()
    assert chat.exitstatus == 130
    assert "Traceback" not in (chat.before or "")
