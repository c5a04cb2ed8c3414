"""`stepwise chat` driven as a person would: a real terminal (pexpect), typing and reading."""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

import pexpect


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
