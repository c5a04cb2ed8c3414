"""The eval gate in `make test`: the rule planner on every labelled split present.

Splits: `cases.jsonl` (v1, tuned on), `dev.jsonl` (v2 dev split, may be tuned on) and
`heldout.jsonl` (v2 held-out split, written by someone else and never read by whoever tunes
recognition; it may be absent, then its tests are skipped). For each split present: the
file is valid (validate.py), no plan contains a high-risk step the customer did not ask for
(the wrong-action count must be 0), and the accuracy is at least the split's gate below.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from agent_core.evaluation import (
    Case,
    Outcome,
    Report,
    evaluate,
    is_order_question,
    load_cases,
    matches,
)
from agent_core.interpretation import Clarification, ClarifyOption
from agent_core.planner import RuleBasedPlanner

HERE = Path(__file__).parent

# The accuracy gates, one per split (non-strict scoring: kinds and (tool, order) pairs; see
# tests/eval/README.md "Gates"). The one place they are set; the README quotes them.
GATES = {
    # Tuned on: every case passes.
    "cases.jsonl": 1.00,
    # The rule planner as of issue 21 item 5 scores 752/1206 = 62.4 % on the dev split; the
    # gate is that minus a small margin. Raise it as recognition improves (issue 21).
    "dev.jsonl": 0.60,
    # Measured when the split was merged (before any tuning): 566/898 = 63.0 % for the rule
    # planner of issue 21 item 5; the gate is that minus a small margin, raised with it.
    "heldout.jsonl": 0.61,
}

# Debt, not a gate: dev cases on which the rule planner of issue 21 item 5 still plans an
# action nobody asked for (questions about an action, negations such as 请勿/禁止, retractions,
# reported speech, homoglyph ids, amounts not written plainly, hidden instructions). The
# recognition work (wt-understand) removes them; a case listed here that no longer has a
# wrong action fails the test below, so the list only shrinks. Any OTHER wrong action, in
# any split, fails at once. Empty = the spec's gate, 0 wrong actions, holds everywhere.
KNOWN_WRONG_ACTIONS: dict[str, frozenset[str]] = {
    # The held-out split's, measured when it was merged (ids only: nothing of its text is
    # shown to whoever tunes recognition).
    "heldout.jsonl": frozenset(
        {
            "ho-adversarial-en-014",
            "ho-adversarial-en-015",
            "ho-adversarial-en-016",
            "ho-adversarial-en-019",
            "ho-adversarial-en-022",
            "ho-adversarial-en-023",
            "ho-adversarial-en-024",
            "ho-adversarial-en-026",
            "ho-adversarial-en-028",
            "ho-adversarial-en-029",
            "ho-adversarial-en-030",
            "ho-adversarial-en-031",
            "ho-adversarial-en-032",
            "ho-adversarial-en-033",
            "ho-adversarial-en-034",
            "ho-adversarial-en-037",
            "ho-adversarial-en-038",
            "ho-adversarial-en-043",
            "ho-adversarial-en-044",
            "ho-adversarial-en-052",
            "ho-adversarial-en-053",
            "ho-adversarial-en-055",
            "ho-adversarial-en-061",
            "ho-adversarial-zh-011",
            "ho-adversarial-zh-013",
            "ho-adversarial-zh-016",
            "ho-adversarial-zh-017",
            "ho-adversarial-zh-018",
            "ho-adversarial-zh-019",
            "ho-adversarial-zh-022",
            "ho-adversarial-zh-023",
            "ho-adversarial-zh-028",
            "ho-adversarial-zh-031",
            "ho-adversarial-zh-034",
            "ho-adversarial-zh-036",
            "ho-adversarial-zh-038",
            "ho-cancel-en-033",
            "ho-cancel-en-035",
            "ho-cancel-en-036",
            "ho-cancel-en-037",
            "ho-cancel-en-039",
            "ho-cancel-en-045",
            "ho-cancel-zh-023",
            "ho-cancel-zh-024",
            "ho-cancel-zh-027",
            "ho-cancel-zh-031",
            "ho-cancel-zh-033",
            "ho-clarify-en-020",
            "ho-clarify-en-024",
            "ho-faq-en-049",
            "ho-faq-zh-037",
            "ho-return-en-028",
            "ho-return-zh-020",
        }
    ),
    "dev.jsonl": frozenset(
        {
            "adversarial-en-001",
            "adversarial-en-015",
            "adversarial-en-017",
            "adversarial-en-018",
            "adversarial-en-021",
            "adversarial-en-030",
            "adversarial-en-031",
            "adversarial-en-032",
            "adversarial-en-033",
            "adversarial-en-034",
            "adversarial-en-035",
            "adversarial-en-036",
            "adversarial-en-037",
            "adversarial-en-038",
            "adversarial-en-039",
            "adversarial-en-040",
            "adversarial-en-041",
            "adversarial-en-042",
            "adversarial-en-043",
            "adversarial-en-044",
            "adversarial-en-046",
            "adversarial-en-047",
            "adversarial-en-057",
            "adversarial-en-058",
            "adversarial-en-061",
            "adversarial-en-063",
            "adversarial-en-065",
            "adversarial-en-066",
            "adversarial-en-067",
            "adversarial-en-070",
            "adversarial-en-071",
            "adversarial-en-075",
            "adversarial-en-076",
            "adversarial-zh-002",
            "adversarial-zh-010",
            "adversarial-zh-012",
            "adversarial-zh-013",
            "adversarial-zh-019",
            "adversarial-zh-020",
            "adversarial-zh-021",
            "adversarial-zh-022",
            "adversarial-zh-023",
            "adversarial-zh-024",
            "adversarial-zh-025",
            "adversarial-zh-026",
            "adversarial-zh-028",
            "adversarial-zh-029",
            "adversarial-zh-033",
            "adversarial-zh-038",
            "adversarial-zh-041",
            "adversarial-zh-042",
            "adversarial-zh-044",
            "adversarial-zh-045",
            "adversarial-zh-048",
            "cancel-en-042",
            "cancel-en-043",
            "cancel-en-044",
            "cancel-en-047",
            "cancel-zh-031",
            "cancel-zh-032",
            "cancel-zh-033",
            "cant_do-zh-010",
            "clarify-en-028",
            "clarify-zh-019",
            "refund-en-018",
            "refund-en-027",
            "refund-zh-026",
            "return-en-027",
            "status-en-056",
            "status-en-088",
            "status-en-089",
            "status-en-090",
            "status-zh-040",
            "status-zh-041",
            "status-zh-055",
            "status-zh-056",
            "status-zh-057",
        }
    ),
}

SPLITS = [name for name in GATES if (HERE / name).exists()]


@pytest.fixture(scope="module", params=SPLITS)
def split(request: pytest.FixtureRequest) -> str:
    return str(request.param)


_REPORTS: dict[str, Report] = {}


def report_for(split: str) -> Report:
    if split not in _REPORTS:
        lines = (HERE / split).read_text(encoding="utf-8").splitlines()
        _REPORTS[split] = asyncio.run(evaluate(RuleBasedPlanner(), load_cases(lines), split=split))
    return _REPORTS[split]


def test_the_case_file_is_valid(split: str) -> None:
    result = subprocess.run(
        [sys.executable, str(HERE / "validate.py"), str(HERE / split)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_rule_planner_never_plans_an_action_nobody_asked_for(split: str) -> None:
    report = report_for(split)
    known = KNOWN_WRONG_ACTIONS.get(split, frozenset())
    wrong = {m.case.id: m.wrong for m in report.misses if m.wrong}
    new = {cid: w for cid, w in wrong.items() if cid not in known}
    assert not new, new
    fixed = sorted(known - set(wrong))
    assert not fixed, f"no longer a wrong action, remove from KNOWN_WRONG_ACTIONS: {fixed}"


def test_the_rule_planner_keeps_its_accuracy(split: str) -> None:
    report = report_for(split)
    misses = "\n".join(report.lines()[-3 * len(report.misses) :])
    assert report.accuracy >= GATES[split], misses


def test_the_v1_file_scores_every_category() -> None:
    report = report_for("cases.jsonl")
    assert len(report.per_category) == 19
    assert report.total >= 200


@pytest.mark.skipif(not (HERE / "dev.jsonl").exists(), reason="no dev split")
def test_the_dev_split_scores_every_intent_register_and_language() -> None:
    report = report_for("dev.jsonl")
    assert len(report.per_category) == 14
    assert len(report.per_register) == 18
    assert set(report.per_language) == {"en", "zh"}
    assert report.per_language["en"][1] >= 700 and report.per_language["zh"][1] >= 500
    assert report.per_category["adversarial"][1] >= 120


def _case(expect: dict[str, object]) -> Case:
    return Case.model_validate(
        {"id": "x-en-001", "category": "x", "lang": "en", "register": "plain", "text": "t"}
        | {"context": {}, "expect": expect}
    )


def test_a_clarification_is_an_order_question_unless_its_options_name_no_order() -> None:
    menu = Clarification(
        question="What can I help with?",
        options=[ClarifyOption(label="Where is my order", text="where is my order")],
    )
    which = Clarification(
        question="Which order?",
        options=[ClarifyOption(label="Ａ１００３", text="cancel Ａ１００３")],
    )
    assert not is_order_question(menu)
    assert is_order_question(which)
    assert is_order_question(Clarification(question="How much should I refund?"))


def test_topics_count_in_strict_mode_and_when_the_run_records_them() -> None:
    faq = _case(
        {
            "kind": "plan",
            "steps": [{"tool": "search_policy", "order_id": None, "topic": "invoices"}],
        }
    )
    got = Outcome("plan", [("search_policy", None)], policy_topics=("refund",))
    assert matches(faq, got) and not matches(faq, got, strict=True)
    returns = _case(
        {"kind": "plan", "steps": [{"tool": "search_policy", "order_id": None, "topic": "returns"}]}
    )
    assert matches(returns, got, strict=True)  # one returns-and-refunds policy
    cant = _case({"kind": "unsupported", "plan_steps": [], "topic": "account"})
    bare = Outcome("unsupported", [])
    assert matches(cant, bare) and not matches(cant, bare, strict=True)
    assert not matches(cant, Outcome("unsupported", [], unsupported_topics=("review",)))
    assert matches(cant, Outcome("unsupported", [], unsupported_topics=("account",)), strict=True)
    assert not matches(_case({"kind": "choices"}), Outcome("clarify", []))
