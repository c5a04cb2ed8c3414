"""The README tests itself (issue 23 item 13): its examples are run and compared with what
the program prints, like doctests. So does every page of docs/ (docs/*.md, issue 34 item 5:
what moved out of the README is tested as it was in it), by the same markers and rules.

Every fenced block of README.md and of each docs/*.md is accounted for, by what it is or by
an HTML comment on the line right before its opening fence:

* a ```sh block whose every line is a `.venv/bin/stepwise ...` command is **run** (each
  command, against a fresh database: `STEPWISE_DB` in a temporary directory, seeded with
  the demo shop) and must exit 0 with nothing on stderr;
* a ```toml block is **parsed** (tomllib);
* ``<!-- readme-test: chat [NAME=value ...] -->``: a ``you>`` transcript, **replayed** in
  `stepwise chat` (a real terminal, pexpect; with those settings) and compared line by line;
* ``<!-- readme-test: demo -->``: what `stepwise demo` (`make run` without a token) prints
  when it starts, compared line by line (run on free ports, stopped with Ctrl-C);
* ``<!-- readme-test: synopsis -->``: the CLI reference: every subcommand and flag it names
  exists, and each line runs in its shortest form (placeholders filled in), except the
  commands `NOT_RUN` names with a reason;
* ``<!-- readme-test: skip (reason) -->``: not run, and the reason says why (Telegram, a
  model endpoint, a diagram...).

A block that is none of these fails `test_every_block_is_run_or_skipped`, so a new example
cannot go untested silently.

Outputs are compared after `normalise`, on both sides: run ids, trace ids, timestamps and
ports vary from run to run and become ``<run>``, ``<trace>``, ``<time>`` and ``<port>``;
blank lines and trailing spaces are dropped; a "…" in a README line stands for any text
(the demo's staff token, say).

The demo shop's table (the "try" column) is checked by `SHOP_TABLE`: each row's quoted
requests are asked with `stepwise ask --json --user <owner>` and the outcome the row
promises is asserted; every quoted text of a row must be in that table, so the README's
promises and the assertions cannot part. A section a check reads (the demo shop, the CLI
reference, the `ask --json` keys) is found in whichever document holds it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pexpect
import pytest

ROOT = Path(__file__).resolve().parent.parent
README_PATH = ROOT / "README.md"
# The README and every page of docs/, by their path from the repository's root.
DOC_PATHS = [README_PATH, *sorted((ROOT / "docs").glob("*.md"))]
DOCS = {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8") for path in DOC_PATHS}
README = DOCS["README.md"]
STEPWISE = ".venv/bin/stepwise "


# -- the blocks -------------------------------------------------------------------------------

MARKER = re.compile(r"<!--\s*readme-test:\s*(?P<kind>[\w-]+)\s*(?P<rest>.*?)\s*-->")


@dataclass
class Block:
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    marker: str | None = None  # the readme-test kind, if a comment names one
    rest: str = ""  # what follows the kind in the comment
    lines: list[str] = field(default_factory=list)
    doc: str = "README.md"  # the document it is in

    def __str__(self) -> str:
        return f"{self.doc}:{self.line} ({self.lang or 'plain'})"


def blocks(text: str = README, doc: str = "README.md") -> list[Block]:
    found: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = re.match(r"^(\s*)```(\w*)\s*$", lines[i])
        if opening is None:
            i += 1
            continue
        indent, lang = opening.groups()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j])
            j += 1
        before = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        marker = MARKER.search(before)
        found.append(
            Block(
                line=i + 1,
                lang=lang,
                text="\n".join(body),
                marker=marker["kind"] if marker else None,
                rest=marker["rest"] if marker else "",
                lines=body,
                doc=doc,
            )
        )
        i = j + 1
    return found


def all_blocks() -> list[Block]:
    """Every fenced block of the README and of each docs/*.md page."""
    return [block for doc, text in DOCS.items() for block in blocks(text, doc)]


def section(start: str) -> str:
    """The text from `start` (a heading, say) on, in the one document that has it."""
    holding = [text for text in DOCS.values() if start in text]
    assert len(holding) == 1, f"{start!r} is in {len(holding)} documents, not one"
    return holding[0][holding[0].index(start) :]


def is_command_block(block: Block) -> bool:
    lines = [line for line in block.lines if line.strip()]
    return (
        block.lang == "sh"
        and block.marker is None
        and bool(lines)
        and all(line.startswith(STEPWISE) for line in lines)
    )


KINDS = {"chat", "demo", "synopsis", "skip"}


def unaccounted(found: list[Block]) -> list[str]:
    """The blocks that are neither run nor skipped with a reason, and bad markers."""
    problems = []
    for block in found:
        if block.marker is None:
            if not (is_command_block(block) or block.lang == "toml"):
                problems.append(f"{block}: neither run nor skipped")
        elif block.marker not in KINDS:
            problems.append(f"{block}: unknown readme-test kind {block.marker!r}")
        elif block.marker == "skip" and not re.fullmatch(r"\(.{3,}\)", block.rest):
            problems.append(f"{block}: a skip needs its reason in parentheses")
    return problems


@pytest.mark.parametrize("doc", list(DOCS))
def test_every_block_is_run_or_skipped(doc: str) -> None:
    problems = unaccounted(blocks(DOCS[doc], doc))
    assert not problems, (
        "put '<!-- readme-test: skip (why) -->' right before a block that cannot run here, "
        f"or a kind that runs it: {problems}"
    )


def test_the_walk_throughs_are_still_marked() -> None:
    assert {"chat", "demo"} <= {block.marker for block in blocks()}  # the README's quickstart
    assert {"chat", "demo", "synopsis"} <= {block.marker for block in all_blocks()}


def test_blocks_name_the_document_they_are_in() -> None:
    [block] = blocks("x\n\n<!-- readme-test: skip (a diagram) -->\n```\na\n```\n", "docs/x.md")
    assert str(block) == "docs/x.md:4 (plain)"


def test_a_new_block_cannot_go_untested_silently() -> None:
    text = (
        "```\nsome output\n```\n\n```sh\nmake run\n```\n\n"
        "<!-- readme-test: skip -->\n```\nx\n```\n\n<!-- readme-test: maybe -->\n```\ny\n```\n"
        "\n```sh\n.venv/bin/stepwise runs\n```\n\n<!-- readme-test: skip (needs X) -->\n```\nz\n```\n"
    )
    assert [p.split(": ", 1)[1] for p in unaccounted(blocks(text))] == [
        "neither run nor skipped",
        "neither run nor skipped",
        "a skip needs its reason in parentheses",
        "unknown readme-test kind 'maybe'",
    ]


def test_the_block_parser_sees_markers_and_indented_fences() -> None:
    text = "a\n\n<!-- readme-test: skip (needs Telegram) -->\n   ```sh\n   make run\n   ```\n"
    [block] = blocks(text)
    assert (block.marker, block.rest, block.lines) == ("skip", "(needs Telegram)", ["make run"])


# -- normalising ------------------------------------------------------------------------------

VARYING = (
    (
        re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?"),
        "<time>",
    ),
    (re.compile(r"\b[0-9a-f]{16}\b"), "<trace>"),
    (re.compile(r"\b[0-9a-f]{12}\b"), "<run>"),
    (re.compile(r"(127\.0\.0\.1|localhost):\d+"), r"\1:<port>"),
)


def normalise(text: str) -> list[str]:
    """The lines to compare: ids, times and ports made fixed, blank lines dropped."""
    out = []
    for line in text.replace("\r\n", "\n").split("\n"):
        for pattern, replacement in VARYING:
            line = pattern.sub(replacement, line)
        if line.strip():
            out.append(line.rstrip())
    return out


def matches(expected: str, actual: str) -> bool:
    """One README line against one printed line; "…" in the README is any text."""
    pattern = ".*".join(re.escape(part) for part in expected.split("…"))
    return re.fullmatch(pattern, actual) is not None


def assert_same_lines(expected: list[str], actual: list[str], where: str) -> None:
    same = len(expected) == len(actual) and all(map(matches, expected, actual))
    assert same, f"{where} differs from what is printed:\n" + "\n".join(
        ["--- README", *expected, "--- printed", *actual]
    )


def test_the_normaliser() -> None:
    printed = "cf6768840847  2026-12-01 23:52:27  trace 0ef4ca61da615557 http://127.0.0.1:42535/"
    assert normalise(printed) == ["<run>  <time>  trace <trace> http://127.0.0.1:<port>/"]
    assert matches("  Staff token:        …  (generated)", "  Staff token:        x1Y  (generated)")
    assert not matches("order A1003", "order A1004")


# -- running it -------------------------------------------------------------------------------


def clean_env(db: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))}
    env["STEPWISE_DB"] = str(db)
    env.update(extra)
    return env


def stepwise(db: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stepwise", *args],
        env=clean_env(db, **extra),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def ask(db: Path, text: str, user: str) -> dict[str, Any]:
    proc = stepwise(db, "ask", text, "--user", user, "--json")
    assert proc.returncode in (0, 1) and proc.stderr == "", proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def confirm(db: Path, run_id: str, user: str) -> dict[str, Any]:
    proc = stepwise(db, "confirm", run_id, "--user", user, "--json")
    assert proc.returncode in (0, 1) and proc.stderr == "", proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def command_args(line: str) -> list[str]:
    assert line.startswith(STEPWISE), line
    return shlex.split(line.removeprefix(STEPWISE), comments=True)


@pytest.mark.parametrize("block", [b for b in all_blocks() if is_command_block(b)], ids=str)
def test_a_command_block_runs(block: Block, tmp_path: Path) -> None:
    for line in filter(str.strip, block.lines):
        proc = stepwise(tmp_path / "stepwise.db", *command_args(line))
        assert proc.returncode == 0 and proc.stderr == "", f"{block}: {line}\n{proc.stderr}"


@pytest.mark.parametrize("block", [b for b in all_blocks() if b.lang == "toml"], ids=str)
def test_a_toml_block_parses(block: Block) -> None:
    tomllib.loads(block.text)


# -- `ask --json`: the keys the README lists --------------------------------------------------


def _keys(spec: str) -> list[str]:
    return re.findall(r"(?:^|[{,]\s*)(\w+)", re.sub(r"\{[^{}]*\}", "{}", spec))


def test_ask_json_prints_the_keys_the_readme_lists(tmp_path: Path) -> None:
    promised = re.search(r"prints one JSON object: `(\{.*?\})`", section("prints one JSON"), re.S)
    assert promised is not None
    spec = " ".join(promised[1].split())
    step_spec = re.search(r"steps:\[(\{.*\})\]", spec)
    assert step_spec is not None
    top = _keys(spec[1:-1].replace(step_spec[0], "steps"))
    step = _keys(step_spec[1][1:-1])
    out = ask(tmp_path / "s.db", "where is order A1001", "10001")
    assert list(out) == top
    assert list(out["steps"][0]) == step


# -- `stepwise chat` transcripts ---------------------------------------------------------------

PROMPTS = (
    r"you> ",
    r"Confirm\? \[y/N\] ",
    r"确认吗？\[y/N\] ",
    r"Choose 1-\d+ \(Enter to skip\): ",
)
PROMPT_AT_START = re.compile("^(" + "|".join(PROMPTS) + ")(.*)$")


def replay_chat(transcript: list[str], db: Path, settings: dict[str, str]) -> list[str]:
    """Type the transcript's inputs into `stepwise chat`; what the terminal showed, as the
    transcript writes it (each prompt on the line of what was typed after it)."""
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "stepwise", "chat"],
        env=clean_env(db, **settings),
        cwd=str(ROOT),
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 500),
    )
    shown: list[str] = []
    try:
        chat.expect_exact("you> ")  # past the greeting
        prompt = "you> "
        inputs = [m for m in map(PROMPT_AT_START.match, transcript) if m is not None]
        assert inputs and inputs[0][1] == "you> ", "a transcript starts with you>"
        for typed in inputs:
            assert re.fullmatch(typed[1], prompt) or typed[1] == prompt, (typed[0], prompt)
            shown.append(prompt + typed[2])
            chat.sendline(typed[2])
            chat.expect(list(PROMPTS))
            printed = chat.before.replace("\r\n", "\n").split("\n")
            shown.extend(printed[1:])  # the first line is the terminal's echo of the input
            prompt = chat.after
        assert prompt == "you> ", f"the chat still waits at {prompt!r}"
        chat.sendeof()
        chat.expect(pexpect.EOF)
    finally:
        chat.close(force=True)
    return shown


def settings_of(rest: str) -> dict[str, str]:
    pairs = [word.split("=", 1) for word in shlex.split(rest)]
    assert all(len(p) == 2 and p[0].startswith("STEPWISE_") for p in pairs), rest
    return {name: value for name, value in pairs}


@pytest.mark.parametrize("block", [b for b in all_blocks() if b.marker == "chat"], ids=str)
def test_a_chat_transcript_is_what_the_terminal_shows(block: Block, tmp_path: Path) -> None:
    shown = replay_chat(block.lines, tmp_path / "chat.db", settings_of(block.rest))
    assert_same_lines(normalise(block.text), normalise("\n".join(shown)), str(block))


# -- what `stepwise demo` prints ---------------------------------------------------------------


def test_the_quickstart_shows_what_the_demo_prints(tmp_path: Path) -> None:
    [block] = [b for b in all_blocks() if b.marker == "demo"]
    demo = subprocess.Popen(
        [sys.executable, "-m", "stepwise", "demo", "--chat-port", "0", "--staff-port", "0"],
        env=clean_env(tmp_path / "demo.db"),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    printed: list[str] = []
    try:
        assert demo.stdout is not None
        for line in demo.stdout:
            printed.append(line)
            if "Ctrl-C" in line:
                break
    finally:
        demo.send_signal(signal.SIGINT)
        _, err = demo.communicate(timeout=60)
    assert demo.returncode == 0 and "Traceback" not in err, err
    assert_same_lines(normalise(block.text), normalise("".join(printed)), str(block))


# -- the CLI reference -------------------------------------------------------------------------

# Synopsis commands that are only checked for their flags, and why.
NOT_RUN = {
    "chat": "interactive: the quickstart's transcript replays it",
    "doctor": "asks Telegram (getMe) with a real token",
    "demo": "long-running: the quickstart's printed block runs it",
    "serve": "needs a Telegram token",
    "run": "`make run`: serves Telegram, or starts the demo",
}
# What the synopsis's placeholders stand for when a line is run (an optional FILE too: the
# smallest split, not every one). RUN_ID is a run paused on one of these orders, one a line.
PLACEHOLDERS = {"TEXT": "where is order A1001", "ID": "10001", "FILE": "tests/eval/cases.jsonl"}
PAUSABLE = "A1003"  # pending in the demo shop: cancelling it pauses for a Confirm


def synopsis_lines() -> list[str]:
    [block] = [b for b in all_blocks() if b.marker == "synopsis"]
    joined: list[str] = []
    for line in block.lines:
        if line.startswith(" ") and joined:  # a continuation of the line above
            joined[-1] += " " + line.split("#")[0].strip()
        elif line.strip():
            joined.append(line.split("  #")[0].strip())
    return joined


def subcommand(line: str) -> tuple[list[str], str]:
    words = line.removeprefix(STEPWISE).split()
    name = [words[0], words[1]] if words[:2] == ["tools", "check"] else [words[0]]
    return name, " ".join(words[len(name) :])


def command_parser(name: list[str]) -> argparse.ArgumentParser | None:
    from stepwise.cli import build_parser

    parser = build_parser()
    for word in name:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or word not in subs[0].choices:
            return None
        parser = subs[0].choices[word]
    return parser


def test_the_cli_reference_names_only_commands_and_flags_that_exist() -> None:
    problems = []
    for line in synopsis_lines():
        assert line.startswith(STEPWISE), line
        name, rest = subcommand(line)
        parser = command_parser(name)
        if parser is None:
            problems.append(f"no command {' '.join(name)}")
            continue
        flags = set(parser._option_string_actions)
        problems += [
            f"{' '.join(name)} {f}" for f in re.findall(r"--[\w-]+", rest) if f not in flags
        ]
    assert not problems, f"the CLI reference names what does not exist: {problems}"


def shortest_form(line: str) -> list[str]:
    """A synopsis line without its [optional parts], placeholders filled in."""
    required = re.sub(r"\[(FILE) \.\.\.\]", r"\1", line.split(">")[0])
    required = re.sub(r"\[[^\[\]]*\]", "", required)
    return [PLACEHOLDERS.get(w, w) for w in required.removeprefix(STEPWISE).split()]


def runnable_lines() -> list[str]:
    return [line for line in synopsis_lines() if subcommand(line)[0][0] not in NOT_RUN]


def test_the_cli_reference_runs_every_command_that_changes_or_shows_runs() -> None:
    ran = {shortest_form(line)[0] for line in runnable_lines()}
    assert {"ask", "confirm", "reject", "runs", "show", "export", "eval", "tools"} <= ran


# One test a line (each on its own database), so that the workers share them out: run one
# after another they were the suite's slowest test.
@pytest.mark.parametrize("line", runnable_lines())
def test_the_cli_reference_runs(line: str, tmp_path: Path) -> None:
    """The line in its shortest form, on a database with a run: exit 0, no stderr."""
    db = tmp_path / "cli.db"
    ask(db, "where is order A1001", "10001")  # something for runs, show and export
    args = shortest_form(line)
    if "RUN_ID" in args:
        paused = ask(db, f"cancel order {PAUSABLE}", "10001")
        assert paused["status"] == "paused", paused["answer"]
        args = [paused["run_id"] if a == "RUN_ID" else a for a in args]
    proc = stepwise(db, *args)
    assert proc.returncode == 0 and not proc.stderr and proc.stdout.strip(), (
        f"ran {args}: exit {proc.returncode}\n{proc.stderr}"
    )


# -- the demo shop's "try" column --------------------------------------------------------------

Check = Callable[[Path, str], None]


def steps_of(out: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {step["tool"]: step for step in out["steps"]}


def asked_then_confirmed(db: Path, text: str, owner: str) -> dict[str, Any]:
    paused = ask(db, text, owner)
    assert paused["status"] == "paused", paused["answer"]
    return confirm(db, paused["run_id"], owner)


def status_and_eta(db: Path, owner: str) -> None:
    out = ask(db, "订单 A1001 到哪了", owner)
    assert [s["tool"] for s in out["steps"]] == ["get_order_status"]
    assert "A1001" in out["answer"] and "2026-12-03" in out["answer"]


def carrier_events(db: Path, owner: str) -> None:
    out = ask(db, "where exactly is my parcel A1001?", owner)
    track = steps_of(out)["track_parcel"]
    assert track["status"] == "done" and track["observation"]["events"]
    assert all(event["text"] in out["answer"] for event in track["observation"]["events"])


def compensation_skipped(db: Path, owner: str) -> None:
    out = ask(db, "A1002 如果还没送达，看看延迟补偿", owner)
    assert steps_of(out)["search_policy"]["status"] == "skipped"


def a_return_number(db: Path, owner: str) -> None:
    out = asked_then_confirmed(db, "return order A1002", owner)
    assert out["status"] == "completed"
    assert steps_of(out)["request_return"]["observation"]["return_id"] in out["answer"]


def a_refund_number_once(db: Path, owner: str) -> None:
    paused = ask(db, "refund 59 for order A1002", owner)
    assert "Request a refund of 59.00 for order A1002?" in paused["answer"]
    out = confirm(db, paused["run_id"], owner)
    assert steps_of(out)["request_refund"]["observation"]["refund_id"] in out["answer"]
    again = asked_then_confirmed(db, "refund 59 for order A1002", owner)
    refused = steps_of(again)["request_refund"]
    assert again["status"] == "failed" and refused["error"]["type"] == "invalid_arguments"
    assert "more than" in again["answer"] and "paid" in again["answer"]


def cancelled_once(db: Path, owner: str) -> None:
    out = asked_then_confirmed(db, "cancel order A1003", owner)
    assert out["status"] == "completed" and "A1003 has been cancelled" in out["answer"]
    again = ask(db, "cancel order A1003", owner)
    assert steps_of(again)["cancel_order"]["status"] == "skipped"


def cancel_skipped(db: Path, owner: str) -> None:
    out = ask(db, "取消订单 A1004", owner)
    cancel = steps_of(out)["cancel_order"]
    assert cancel["status"] == "skipped" and "已经是取消状态" in cancel["skip_reason"]


def only_has_been_cancelled(db: Path, owner: str) -> None:
    out = asked_then_confirmed(db, "cancel A1005", owner)
    assert out["answer"] == "Order A1005 has been cancelled."


def return_refused(db: Path, owner: str) -> None:
    out = asked_then_confirmed(db, "return order A1006", owner)
    assert out["status"] == "failed" and "return window" in out["answer"]
    assert steps_of(out)["request_return"]["error"]["type"] == "invalid_arguments"


def address_changed(db: Path, owner: str) -> None:
    out = asked_then_confirmed(db, "change the address of A1007 to 7 Harbour Road, Ningbo", owner)
    assert out["status"] == "completed" and "7 Harbour Road, Ningbo" in out["answer"]
    shipped = ask(db, "change the address of A1001 to 7 Harbour Road, Ningbo", owner)
    change = steps_of(shipped)["change_address"]
    assert change["status"] == "skipped" and change["skip_reason"]


def same_as_unknown(db: Path, owner: str) -> None:
    theirs = ask(db, "where is B2001", owner)
    unknown = ask(db, "where is B9999", owner)
    assert theirs["status"] == unknown["status"] == "failed"
    assert theirs["answer"] == unknown["answer"].replace("B9999", "B2001")


# Each row of the README's demo-shop table: (the order, who asks) and, for every quoted text
# of its "try" column, the check that asks it (a request) or shows it (a promised answer).
SHOP_TABLE: dict[tuple[str, str], dict[str, Check | None]] = {
    ("A1001", "10001"): {
        "订单 A1001 到哪了": status_and_eta,
        "where exactly is my parcel A1001?": carrier_events,
    },
    ("A1002", "10001"): {
        "A1002 如果还没送达，看看延迟补偿": compensation_skipped,
        "return order A1002": a_return_number,
        "refund 59 for order A1002": a_refund_number_once,
        "Request a refund of 59.00 for order A1002?": None,  # checked by a_refund_number_once
    },
    ("A1003", "10001"): {"cancel order A1003": cancelled_once},
    ("A1004", "10001"): {"取消订单 A1004": cancel_skipped},
    ("A1005", "10001"): {"cancel A1005": only_has_been_cancelled, "has been cancelled": None},
    ("A1006", "10001"): {"return order A1006": return_refused},
    ("A1007", "10001"): {
        "change the address of A1007 to 7 Harbour Road, Ningbo": address_changed,
    },
    ("B2001", "10001"): {"where is B2001": same_as_unknown},
}


def shop_rows() -> dict[tuple[str, str], list[str]]:
    shop = section("The demo shop (default tool backend)")
    rows: dict[tuple[str, str], list[str]] = {}
    for row in re.findall(r"^\| ([A-Z]\d{4}) \| (\d+) \|(.*)\|$", shop, re.M)[:20]:
        order, owner, rest = row
        try_column = rest.split("|")[-1]
        asker = re.match(r"\s*as (\d+):", try_column)
        rows[(order, asker[1] if asker else owner)] = re.findall(r'"([^"]+)"', try_column)
    return rows


def test_the_shop_table_and_its_checks_name_the_same_texts() -> None:
    readme = {key: sorted(quoted) for key, quoted in shop_rows().items()}
    checked = {key: sorted(texts) for key, texts in SHOP_TABLE.items()}
    assert readme == checked


@pytest.mark.parametrize("row", list(SHOP_TABLE), ids=lambda row: f"{row[0]}-as-{row[1]}")
def test_a_shop_table_row_does_what_it_promises(row: tuple[str, str], tmp_path: Path) -> None:
    for check in SHOP_TABLE[row].values():
        if check is not None:
            check(tmp_path / "shop.db", row[1])


# -- what the prose says `stepwise tools` prints -----------------------------------------------


def test_stepwise_tools_lists_what_the_readme_says(tmp_path: Path) -> None:
    shop = section("The demo shop (default tool backend)")[:600]
    assert "seven tools of the catalog (`stepwise tools`\nlists them)" in shop
    claim = "(each tool's risk, who approves it, what serves\nit, its description and arguments)"
    assert section(f"`stepwise tools` lists the catalog in use {claim}")
    out = stepwise(tmp_path / "tools.db", "tools").stdout
    heads = re.findall(
        r"^  (\w+)  \[(read|high) risk(?: approved by the (\w+))?\]  (.+)$", out, re.M
    )
    assert len(heads) == 7
    assert all(approver for _, risk, approver, _ in heads if risk == "high")  # who approves
    assert {served for *_, served in heads} == {"demo shop"}  # what serves it
    entries = re.split(r"^  (?=\w)", out, flags=re.M)[1:]
    assert len(entries) == 7
    assert all(len(e.splitlines()) >= 3 and "arguments: " in e for e in entries)  # description


def test_the_cli_reference_lists_every_run_status() -> None:
    from agent_core.models import RunStatus

    [runs] = [line for line in all_blocks() if line.marker == "synopsis"]
    listed = re.search(r"# S: (.*)$", runs.text, re.M)
    assert listed is not None
    legacy = {RunStatus.CANCELLED}  # nothing ends a run this way any more (a migration)
    assert listed[1].split(", ") == [s.value for s in RunStatus if s not in legacy]


def test_the_shop_prose_no_warranty_policy_and_unknown_orders(tmp_path: Path) -> None:
    shop = section("The demo shop (default tool backend)")[:4000]
    assert (
        '"保修政策是什么" shows the honest\nfallback' in shop and 'Unknown orders ("Z9999")' in shop
    )
    db = tmp_path / "shop.db"
    warranty = ask(db, "保修政策是什么", "10001")
    policy = steps_of(warranty)["search_policy"]
    assert policy["status"] == "fallback" and policy["error"]["type"] == "empty_result"
    assert "不会替你猜测" in warranty["answer"]  # "I won't guess"
    unknown = ask(db, "where is order Z9999", "10001")
    assert unknown["status"] == "failed"
    assert steps_of(unknown)["get_order_status"]["error"]["type"] == "not_found"
