"""`stepwise eval` exits 0 when the only wrong actions are the ones listed as known debt
(tests/eval/known_wrong_actions.json, with why), and 1 for any other."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_cli import stepwise

EVAL = Path(__file__).parent / "eval"


def case(case_id: str) -> str:
    for line in (EVAL / "blind.jsonl").read_text(encoding="utf-8").splitlines():
        if json.loads(line)["id"] == case_id:
            return line
    raise AssertionError(case_id)


def test_a_known_wrong_action_exits_0_and_is_named_any_other_exits_1(tmp_path: Path) -> None:
    known = json.loads((EVAL / "known_wrong_actions.json").read_text(encoding="utf-8"))
    (listed,) = known["blind.jsonl"]
    split = tmp_path / "blind.jsonl"  # the split the id is listed for
    split.write_text(case(listed) + "\n", encoding="utf-8")
    ok = stepwise(tmp_path / "db", "eval", str(split), "--backend", "lexical")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "wrong actions: 1" in ok.stdout and "known wrong actions" in ok.stdout
    assert listed in ok.stdout

    other = tmp_path / "mine.jsonl"  # the same case, in a split it is not listed for
    other.write_text(case(listed) + "\n", encoding="utf-8")
    failed = stepwise(tmp_path / "db", "eval", str(other), "--backend", "lexical")
    assert failed.returncode == 1, failed.stdout + failed.stderr
