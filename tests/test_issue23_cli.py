"""Issue 23 in the terminal: prompts without buttons say what to answer (in the customer's
language), a closed pipe ends a command quietly, and `stepwise --help` loads no heavy
library it does not need."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from tests.test_chat_terminal import spawn_chat
from tests.test_cli import env_for, stepwise

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
    assert (
        'Run "stepwise confirm" for "Yes, cancel A1003", or "stepwise reject" for ' in proc.stdout
    )
    assert "press" not in proc.stdout.lower()
    assert "stepwise confirm" in proc.stdout


# -- 11: a closed pipe --------------------------------------------------------------------


# `eval` on one split: every split is 4,000 cases and 30 s, and the pipe is gone at the first line.
CASES = str(Path(__file__).parent / "eval" / "cases.jsonl")


@pytest.mark.parametrize("command", [["export"], ["tools"], ["eval", CASES]])
def test_11_a_reader_that_went_away_is_no_traceback(tmp_path: Path, command: list[str]) -> None:
    db = tmp_path / "s.db"
    if command == ["export"]:  # something to export
        for text in ("where is order A1001", "where is order A1002", "what is your refund policy"):
            assert stepwise(db, "ask", text, "--user", "10001").returncode == 0
    read, write = os.pipe()
    os.close(read)  # the reader (`head -1`) has gone before anything is written
    with os.fdopen(write, "w") as closed:
        proc = subprocess.run(
            [sys.executable, "-m", "stepwise", *command],
            env=env_for(db),
            stdout=closed,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.returncode == 141


# -- 12: start-up ---------------------------------------------------------------------------


def fresh_python(code: str) -> str:
    """What `code` prints in a new interpreter (this one has imported everything already)."""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return proc.stdout.strip()


def test_12_the_cli_module_loads_no_model_client_database_driver_or_web_stack() -> None:
    code = (
        "import sys, stepwise.cli\n"
        "heavy = [m for m in ('openai', 'psycopg', 'starlette', 'telegram', 'uvicorn') "
        "if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    assert fresh_python(code) == ""


def test_12_a_command_without_a_tools_file_loads_no_http_client_and_compiles_few_patterns() -> None:
    """What every `stepwise` command imports (the commands and the runtime) leaves out httpx
    and inscriptis (only a tools file needs them) and compiles no planner pattern yet."""
    code = (
        "import sys, stepwise.commands, stepwise.runtime\n"
        "from agent_core import lazyre\n"
        "heavy = [m for m in ('httpx', 'inscriptis', 'lxml') if m in sys.modules]\n"
        "compiled = [p for p in lazyre.DECLARED if 'search' in vars(p)]\n"
        "print(','.join(heavy), len(lazyre.DECLARED), len(compiled), sep=';')"
    )
    heavy, declared, compiled = fresh_python(code).split(";")
    assert heavy == "" and int(declared) > 150 and int(compiled) == 0


# -- 6: asking back, in the terminal ------------------------------------------------------


def test_6_a_cancelled_order_and_orders_not_found_are_no_options(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    asked = stepwise(db, "ask", "cancel order A1003", "--user", "10001", "--json")
    run_id = json.loads(asked.stdout)["run_id"]
    assert stepwise(db, "confirm", run_id, "--user", "10001").returncode == 0
    again = json.loads(stepwise(db, "ask", "cancel it", "--user", "10001", "--json").stdout)
    clarify = again["clarify"]
    assert clarify["options"] == [] and "send its number" in clarify["question"]

    other = tmp_path / "t.db"
    stepwise(other, "ask", "where are Z9004 and Z9006?", "--user", "10001")
    again = json.loads(stepwise(other, "ask", "cancel it", "--user", "10001", "--json").stdout)
    clarify = again["clarify"]
    assert clarify["options"] == [] and "send its number" in clarify["question"]
