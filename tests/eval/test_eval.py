"""The eval gate in `make test`: the rule planner on the shipped labelled cases.

Fails when any plan contains a high-risk step the customer did not ask for (the
wrong-action count must be 0), or when the accuracy drops below the figure written in
tests/eval/README.md ("Gate: accuracy ≥ N %").
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agent_core.evaluation import Report, evaluate, load_cases
from agent_core.planner import RuleBasedPlanner

HERE = Path(__file__).parent
CASES = HERE / "cases.jsonl"


def gate() -> float:
    """The accuracy the README promises, as a fraction."""
    match = re.search(r"Gate: accuracy ≥ ([0-9.]+) %", (HERE / "README.md").read_text())
    assert match, "tests/eval/README.md must state the gate"
    return float(match.group(1)) / 100


@pytest.fixture(scope="module")
def report() -> Report:
    cases = load_cases(CASES.read_text(encoding="utf-8").splitlines())
    return asyncio.run(evaluate(RuleBasedPlanner(), cases))


def test_the_case_file_is_valid() -> None:
    result = subprocess.run(
        [sys.executable, str(HERE / "validate.py"), str(CASES)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_rule_planner_never_plans_an_action_nobody_asked_for(report: Report) -> None:
    wrong = [(m.case.id, m.wrong) for m in report.misses if m.wrong]
    assert report.wrong_action_cases == 0, wrong


def test_the_rule_planner_keeps_its_accuracy(report: Report) -> None:
    misses = "\n".join(report.lines()[-3 * len(report.misses) :])
    assert report.accuracy >= gate(), misses


def test_every_category_is_scored(report: Report) -> None:
    assert len(report.per_category) == 19
    assert report.total >= 200
