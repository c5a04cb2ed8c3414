"""The FAQ the shop owns (issue 21): policies are FAQ topics with answers in zh and en.

A question a topic answers gets that answer through one search_policy step, never an order
lookup; a topic the shop has no answer for gets the honest "no clear policy" (no guess).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_core.understanding.planner import PlanRequest, RuleBasedPlanner, built_in_intents
from agent_core.understanding.recognised import faq_queries
from agent_core.understanding.recognition.intents import Kind
from storage.shop.core import matching_policies
from storage.shop.seed import DEFAULT_SEED_PATH

NEW_TOPICS = (
    "payment_methods", "delivery_countries", "delivery_times", "cancellation_fee",
    "refund_times", "invoices", "account_help", "newsletter",
)  # fmt: skip


def seed_rows() -> list[dict[str, Any]]:
    seed = json.loads(DEFAULT_SEED_PATH.read_text(encoding="utf-8"))
    return [{**p, "keywords": json.dumps(p["keywords"])} for p in seed["policies"]]


@pytest.mark.parametrize("topic", NEW_TOPICS)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_each_new_topic_has_exactly_its_own_answer_in_both_languages(topic: str, lang: str) -> None:
    """The query the planner sends for a topic finds that topic's policy and no other (a
    query naming a keyword exactly wins over policies that merely contain it)."""
    queries = faq_queries(built_in_intents())
    found = matching_policies(seed_rows(), queries[topic][lang], lang)  # type: ignore[index,arg-type]
    assert len(found) == 1, (topic, [p.title for p in found])
    assert found[0].lang == lang


def test_every_declared_faq_topic_is_answered_except_warranty() -> None:
    """Warranty stays unanswered on purpose: the honest "no clear policy" path."""
    queries = faq_queries(built_in_intents())
    rows = seed_rows()
    for intent in built_in_intents():
        if intent.kind is not Kind.FAQ:
            continue
        found = matching_policies(rows, queries[intent.name]["en"], "en")  # type: ignore[index]
        assert bool(found) is (intent.name != "warranty"), intent.name


def test_the_old_queries_still_find_their_policies() -> None:
    rows = seed_rows()
    assert [p.title for p in matching_policies(rows, "refund", "en")] == ["Returns and refunds"]
    assert [p.title for p in matching_policies(rows, "cancellation", "en")] == [
        "Cancelling an order"
    ]


def test_a_faq_question_is_answered_by_the_shop_over_the_cli(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))}
    env["STEPWISE_DB"] = str(tmp_path / "stepwise.db")
    proc = subprocess.run(
        [sys.executable, "-m", "stepwise", "ask", "do you accept paypal?", "--user", "10001",
         "--json"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    out = json.loads(proc.stdout)
    assert out["status"] == "completed"
    assert [(s["tool"], s["status"]) for s in out["steps"]] == [("search_policy", "done")]
    assert "Alipay" in out["answer"] and "PayPal" not in out["answer"]


def test_a_question_no_topic_answers_is_not_guessed() -> None:
    draft = RuleBasedPlanner().draft(PlanRequest(text="what colour is the sky on mars?"))
    assert draft.steps == []


def ask(tmp_path: Path, text: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))}
    env["STEPWISE_DB"] = str(tmp_path / "stepwise.db")
    proc = subprocess.run(
        [sys.executable, "-m", "stepwise", "ask", text, "--user", "10001", "--json"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def test_a_cant_do_answer_names_the_topic_and_offers_a_person(tmp_path: Path) -> None:
    account = ask(tmp_path, "delete my account")
    assert account["steps"] == []
    assert "I can't help with changing or deleting accounts here." in account["answer"]
    assert "talk to a person" in account["answer"]
    complaint = ask(tmp_path, "I want to complain about your staff")
    assert complaint["answer"].startswith("I'm sorry to hear that.")
    assert "talk to a person" in complaint["answer"]
