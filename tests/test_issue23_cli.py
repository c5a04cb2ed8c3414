"""Issue 23 in the terminal: prompts without buttons say what to answer (in the customer's
language), a closed pipe ends a command quietly, and `stepwise --help` loads no heavy
library it does not need."""

from __future__ import annotations

from pathlib import Path

import pexpect

from tests.test_chat_terminal import spawn_chat
from tests.test_cli import stepwise

# -- 1 and 7: no buttons in a terminal ------------------------------------------------------


def test_1_7_chat_prompt_says_what_to_type_in_the_customers_language(tmp_path: Path) -> None:
    chat = spawn_chat(tmp_path / "chat.db")
    chat.expect_exact("you> ")
    chat.sendline("帮我取消订单 A1003")
    chat.expect_exact("⏸ 取消订单 A1003 — 需要你的确认")
    chat.expect_exact("确认吗？[y/N] ")
    asked = chat.before
    assert "回答 y 表示“确认取消”，回答 n 表示“不取消”。" in asked
    assert "点击" not in asked and "press" not in asked
    chat.sendline("n")
    chat.expect_exact("🚫 取消订单 A1003 — 你选择了不执行")
    chat.expect_exact("you> ")
    chat.sendline("cancel order A1003")
    chat.expect_exact("Confirm? [y/N] ")
    assert 'Answer y for "Yes, cancel A1003" or n for "No, keep it".' in chat.before
    assert "press" not in chat.before
    chat.sendline("")
    chat.expect_exact("you> ")
    chat.sendeof()
    chat.expect(pexpect.EOF)
    chat.close()


def test_1_ask_names_the_commands_not_buttons(tmp_path: Path) -> None:
    proc = stepwise(tmp_path / "s.db", "ask", "cancel order A1003", "--user", "10001")
    assert proc.returncode == 0, proc.stderr
    assert 'Run the confirm command below for "Yes, cancel A1003", or reject for ' in proc.stdout
    assert "press" not in proc.stdout.lower()
    assert "stepwise confirm" in proc.stdout
