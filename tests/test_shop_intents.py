"""A shop declares intents the code has never seen (issue 21): an FAQ topic and a can't-do
topic, five examples each, in its own TOML file; paraphrases of them are recognised.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_core.understanding.planner import PlanDraft, PlanRequest, Refusal, RuleBasedPlanner
from agent_core.understanding.recognition.intents import IntentsFileError, load

SHOP_INTENTS = """
[faq.gift_wrapping]
label = { en = "Gift wrapping", zh = "礼品包装" }
description = "Whether an order can be gift wrapped and what it costs."
query = { en = "gift wrapping", zh = "礼品包装" }
examples.en = [
  "do you offer gift wrapping", "can you wrap it as a present", "is gift wrap available",
  "how much is gift wrapping", "can I add a gift message",
]
examples.zh = [ "可以礼品包装吗", "能包成礼物吗", "礼品包装多少钱", "有没有礼盒包装", "可以写贺卡吗" ]

[cant_do.engraving]
name = { en = "engraving items", zh = "商品刻字" }
offer = "person"
examples.en = [
  "engrave my name on the watch", "put an engraving on the ring", "laser engrave this",
  "add initials to the lighter", "engrave a message on it",
]
examples.zh = [ "帮我在手表上刻字", "戒指刻名字", "激光刻字", "在打火机上刻缩写", "刻一句话" ]

[tools.cancel_order]
examples.en = [ "scrap the whole order" ]
"""


@pytest.fixture
def planner(tmp_path: Path) -> RuleBasedPlanner:
    path = tmp_path / "shop-intents.toml"
    path.write_text(SHOP_INTENTS, encoding="utf-8")
    return RuleBasedPlanner(intents=load(path))


def draft(planner: RuleBasedPlanner, text: str) -> PlanDraft:
    return planner.draft(PlanRequest(text=text))


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("Could my order be gift-wrapped?", "gift wrapping"),
        ("do you gift wrap presents?", "gift wrapping"),
        ("能不能帮我包装成礼物？", "礼品包装"),
    ],
)
def test_a_new_faq_topic_is_recognised_from_paraphrases(
    planner: RuleBasedPlanner, text: str, query: str
) -> None:
    plan = draft(planner, text)
    assert [(s.tool, s.args["query"]) for s in plan.steps] == [("search_policy", query)]


@pytest.mark.parametrize(
    "text", ["please engrave the watch with my initials", "我想在戒指上刻个名字"]
)
def test_a_new_cant_do_topic_is_named(planner: RuleBasedPlanner, text: str) -> None:
    plan = draft(planner, text)
    assert plan.refusal is Refusal.UNSUPPORTED and plan.steps == []
    assert plan.interpretation is not None
    assert plan.interpretation.unsupported_topics == ["engraving"]


def test_a_tool_gets_more_examples(planner: RuleBasedPlanner) -> None:
    plan = draft(planner, "scrap the whole order A1003")
    assert [(s.tool, s.args["order_id"]) for s in plan.steps] == [
        ("get_order_status", "A1003"),
        ("cancel_order", "A1003"),
    ]


def test_the_built_in_planner_knows_none_of_it() -> None:
    plan = RuleBasedPlanner().draft(PlanRequest(text="please engrave the watch with my initials"))
    assert plan.interpretation is not None
    assert "engraving" not in plan.interpretation.unsupported_topics


def test_a_new_faq_topic_without_a_query_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[faq.x]\nexamples.en = ["a"]\n', encoding="utf-8")
    with pytest.raises(IntentsFileError, match="needs a query"):
        load(path)
    path.write_text("[nonsense]\n", encoding="utf-8")
    with pytest.raises(IntentsFileError, match="unknown tables"):
        load(path)
