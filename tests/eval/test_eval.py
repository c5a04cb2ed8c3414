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
from fractions import Fraction
from pathlib import Path

import pytest

from agent_core.interpretation import Clarification, ClarifyOption
from agent_core.understanding.evaluation import (
    Case,
    Outcome,
    Report,
    evaluate,
    is_order_question,
    load_cases,
    matches,
)
from agent_core.understanding.planner import RuleBasedPlanner
from stepwise.evaluate import known_wrong_actions

HERE = Path(__file__).parent

# The accuracy gates, one per split (non-strict scoring: kinds and (tool, order) pairs; see
# tests/eval/README.md "Gates"). The one place they are set; the README quotes them.
GATES = {
    # Tuned on: every case passes.
    "cases.jsonl": 1.00,
    # 752/1206 = 62.4 % before the recognition work of issue 21, 1077/1206 = 89.3 % after;
    # round 2 added 68 cases (written before tuning on them: 27/68 then) and scores
    # 1203/1274 = 94.4 % (the first 1206: 1140 = 94.5 %). Round 3 added 586 cases in two
    # branches, each batch scored before tuning on it: recall 384 (186/242, 71/88, 49/54)
    # and precision 202 (128/203 with 28 wrong actions); merged, the split scores
    # 1806/1860 = 97.1 % (the first 1274: see tests/eval/README.md). Round 4 added 537 cases
    # in three branches, each batch scored before tuning on it: recall 181 (152/181),
    # precision 145 (114/145 with 12 wrong actions) and an audit of the plain, polite and
    # keyword registers 211 (141/148, 57/63); merged, the split scores 2339/2397 = 97.6 %.
    # Round 5 added 613 (English recall 210, Chinese recall 263, precision 140, each batch
    # committed before tuning on it; see tests/eval/README.md): 2919/3010 = 97.0 %.
    # The gate is that minus a small margin. Raise it as recognition improves. Round 8 added
    # 383 cases, 224 of them a helper's blind batch (166/224 before tuning): 3522/3697 = 95.3 %.
    "dev.jsonl": 0.95,
    # Measured when the split was merged (before any tuning): 566/898 = 63.0 %; after the
    # recognition work of issue 21 (tuned on dev only): 714/898 = 79.5 %, then 750/898 =
    # 83.5 % after its second round, 793/898 = 88.3 % after its third (en 87.9 %, zh
    # 88.9 %), 799/898 = 89.0 % after its fourth (en 459/520 = 88.3 %, zh 340/378 = 89.9 %),
    # 808/898 = 90.0 % after its fifth (en 466/520 = 89.6 %, zh 342/378 = 90.5 %), 811/898 =
    # 90.3 % after its eighth's blind work (en 468/520 = 90.0 %, zh 343/378 = 90.7 %), 814/898
    # = 90.6 % at its end (en 471/520; the 895 still sealed: 812/895 = 90.7 %, en 469/517).
    # The gate is the spec's 90 %, for the whole split and for each language (LANGUAGE_GATES).
    "heldout.jsonl": 0.90,
    # Issue 33's blind batch, 970 cases by five helpers who never read the recogniser,
    # scored before any change for them: 779/970 = 80.3 % (words alone), 783/970 = 80.7 %
    # with the local model. Kept as its own split (folded into dev, it would sink dev's
    # gate); its wrong actions were then closed by general rules: 782/970 = 80.6 % by words
    # alone. The gate is that, to be raised as recognition improves.
    "blind.jsonl": 0.80,
}
# Issue 21's done-means: held-out accuracy at least 90 % in each language.
LANGUAGE_GATES = {"heldout.jsonl": 0.90}

# Debt, not a gate: cases on which the rule planner still plans an action nobody asked for.
# The dev split's 77 are gone (the recognition and precision work of issue 21); what is left
# is held-out. A case listed here that no longer has a wrong action fails the test below,
# so the list only shrinks; any OTHER wrong action, in any split, fails at once. Empty =
# the spec's gate, 0 wrong actions everywhere.
# The ids, with why each is left, are in known_wrong_actions.json (`stepwise eval` reads it
# too: it exits 0 when the only wrong actions are these).
KNOWN_WRONG_ACTIONS: dict[str, frozenset[str]] = {
    split: frozenset(ids) for split, ids in known_wrong_actions().items()
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


def test_the_rule_planner_keeps_its_accuracy_in_each_language(split: str) -> None:
    gate = LANGUAGE_GATES.get(split)
    if gate is None:
        pytest.skip(f"{split} has no per-language gate")
    report = report_for(split)
    below = {
        lang: f"{ok}/{n}"
        for lang, (ok, n) in report.per_language.items()
        if Fraction(ok, n) < Fraction(str(gate))  # exact: 468/520 is 90 %
    }
    assert not below, below


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


def test_the_held_out_split_names_its_misses_by_id_only() -> None:
    """Whoever tunes reads the held-out split's aggregates, never its texts or labels."""
    secret = "cancel A1003 please, the secret text"
    case = _case({"kind": "handoff"}).model_copy(update={"text": secret})
    for split, sealed in (("heldout.jsonl", True), ("dev.jsonl", False)):
        report = asyncio.run(evaluate(RuleBasedPlanner(), [case], split=split))
        assert report.misses and report.sealed is sealed
        shown = "\n".join(report.lines()) + str(report.to_json())
        assert (secret in shown) is not sealed
        assert "x-en-001" in shown
    unsealed = asyncio.run(
        evaluate(RuleBasedPlanner(), [case], split="heldout.jsonl", sealed=False)
    )
    assert secret in "\n".join(unsealed.lines())
