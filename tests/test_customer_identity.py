"""Who the customer is, at the shop (issue 22 item 1): a tool keyed by the customer, which
the code has never seen (`loyalty_points`), declared only in TOML (the tool and its
intents), asked for in English and Chinese through `stepwise ask --json` against the
WooCommerce stand-in; an unlinked customer told how to link; "where is my last order?"
answered with no order number asked. Also the lookup's cache and its config checks.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_core.execution.tools import ToolContext, ToolFailure
from agent_core.http import build_http_tools, load_tools_config
from agent_core.http.config import ToolsConfigError
from agent_core.http.customer import Customer, CustomerCache
from agent_core.understanding.planner import PlanRequest, RuleBasedPlanner
from agent_core.understanding.recognition.intents import load as load_intents
from tests import test_http_woocommerce as woo_tests

ROOT = Path(__file__).resolve().parent.parent
CUSTOMER = woo_tests.CUSTOMER
UNLINKED = 30003
PATTERN = r"\d{3,10}"

woo = woo_tests.woo

LOYALTY_TOOL = """

[tools.loyalty_points]
description = { en = "How many loyalty points the customer has.", zh = "顾客的会员积分。" }
goal = { en = "Look up your loyalty points", zh = "查询你的会员积分" }
url = "https://shop.example/wp-json/shop/v1/points/{customer.id}"
result.points = { type = "integer" }
templates = [{ en = "You have {points} loyalty points.", zh = "你有 {points} 会员积分。" }]

[tools.loyalty_points.response]
fields = { points = "points_balance" }
"""

LOYALTY_INTENTS = """

[tools.loyalty_points]
label = { en = "My points", zh = "我的积分" }
description = "The customer's loyalty points balance."
examples.en = [
  "how many loyalty points do I have", "my points balance", "check my reward points",
  "how many points have I got", "what is my loyalty balance",
]
examples.zh = [ "我的积分有多少", "查一下我的积分", "积分余额", "我有多少积分", "会员积分还剩多少" ]
"""


def files(tmp_path: Path, base: str) -> tuple[Path, Path]:
    tools = (ROOT / "examples" / "woocommerce.toml").read_text(encoding="utf-8") + LOYALTY_TOOL
    tools_path = tmp_path / "tools.toml"
    tools_path.write_text(tools.replace("https://shop.example", base), encoding="utf-8")
    intents = (ROOT / "examples" / "woocommerce-intents.toml").read_text(encoding="utf-8")
    intents_path = tmp_path / "intents.toml"
    intents_path.write_text(intents + LOYALTY_INTENTS, encoding="utf-8")
    return tools_path, intents_path


class Cli:
    """`python -m stepwise ask --json`, one tools file, one intents file, one database."""

    def __init__(self, tmp_path: Path, base: str) -> None:
        tools, intents = files(tmp_path, base)
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))
        }
        self.env.update(
            STEPWISE_DB=str(tmp_path / "runs.db"),
            STEPWISE_TOOLS=str(tools),
            STEPWISE_INTENTS=str(intents),
            STEPWISE_ORDER_PATTERN=PATTERN,
            WOO_BASIC_AUTH=woo_tests.BASIC,
        )

    async def ask(self, text: str, user: int = CUSTOMER) -> dict[str, Any]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "stepwise", "ask", text, "--user", str(user), "--json",
            env=self.env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await proc.communicate()
        assert out, err.decode()
        answer: dict[str, Any] = json.loads(out)
        return answer


async def test_loyalty_points_in_english_and_chinese(tmp_path: Path, woo: woo_tests.Woo) -> None:
    cli = Cli(tmp_path, woo.base)
    en = await cli.ask("how many loyalty points do I have?")
    assert en["status"] == "completed", en
    assert [s["tool"] for s in en["steps"]] == ["loyalty_points"]
    assert en["steps"][0]["args"] == {}
    assert "You have 1250 loyalty points." in en["answer"]
    assert "order" not in en["answer"].lower()

    zh = await cli.ask("我的积分有多少？")
    assert zh["status"] == "completed", zh
    assert "你有 1250 会员积分。" in zh["answer"]
    # The shop was asked for customer 7's points, found by the Telegram user id.
    asked = [path for method, path, _, _ in woo.seen if method == "GET"]
    assert any(
        p.startswith(f"/wp-json/stepwise/v1/customer?telegram_user_id={CUSTOMER}") for p in asked
    )
    assert asked.count("/wp-json/shop/v1/points/7") == 2


async def test_an_unlinked_customer_is_told_how_to_link(tmp_path: Path, woo: woo_tests.Woo) -> None:
    cli = Cli(tmp_path, woo.base)
    en = await cli.ask("how many loyalty points do I have?", user=UNLINKED)
    assert en["status"] == "failed"
    answer = en["answer"]
    assert "Link Telegram" in answer and answer.count("my-account/telegram") == 1
    assert "Which order" not in answer and "order number" not in answer
    assert en["steps"][0]["error"]["type"] == "permission_denied"

    zh = await cli.ask("我的积分有多少？", user=UNLINKED)
    assert "关联 Telegram" in zh["answer"] and "哪个订单" not in zh["answer"]
    # Nothing about points was asked of the shop for a customer it does not know.
    assert not any("/points/" in path for _, path, _, _ in woo.seen)


async def test_where_is_my_last_order(tmp_path: Path, woo: woo_tests.Woo) -> None:
    cli = Cli(tmp_path, woo.base)
    last = await cli.ask("where is my last order?")
    assert last["status"] == "completed", last
    assert [s["tool"] for s in last["steps"]] == ["last_order"]
    assert "Your last order, 1002, is delivered." in last["answer"]

    zh = await cli.ask("我最近的订单到哪了")
    assert "你最近的订单 1002：已完成。" in zh["answer"]

    mine = await cli.ask("show my orders")
    assert [s["tool"] for s in mine["steps"]] == ["my_orders"]
    assert "Order 1002: delivered (59.00)" in mine["answer"]
    assert "Order 1001: paid, being prepared (129.00)" in mine["answer"]
    assert "2001" not in mine["answer"]  # another customer's order is never listed

    mine_zh = await cli.ask("我的订单")  # WooCommerce's statuses in the customer's words
    assert "订单 1001：已付款，备货中（129.00）" in mine_zh["answer"], mine_zh["answer"]
    assert "processing" not in mine_zh["answer"] and "completed" not in mine_zh["answer"]


def test_an_order_question_still_asks_for_the_order_in_the_shops_format() -> None:
    planner = RuleBasedPlanner(order_id_pattern=PATTERN)
    plan = planner.draft(PlanRequest(text="cancel my order"))
    assert plan.interpretation is not None and plan.interpretation.clarify is not None
    question = plan.interpretation.clarify.question
    assert "A1001" not in question and "1001" in question


def test_a_customer_tool_is_planned_only_where_the_catalog_has_it(tmp_path: Path) -> None:
    tools, intents = files(tmp_path, "http://127.0.0.1:9")
    config = load_tools_config(tools, env={"WOO_BASIC_AUTH": woo_tests.BASIC})
    planner = RuleBasedPlanner(
        order_id_pattern=PATTERN, catalog=config.catalog(), intents=load_intents(intents)
    )
    plan = planner.draft(PlanRequest(text="how many loyalty points do I have?"))
    assert [(s.tool, s.args) for s in plan.steps] == [("loyalty_points", {})]
    # An order named is an order question: the customer tool is not guessed.
    plan = planner.draft(PlanRequest(text="where is order 1001"))
    assert [s.tool for s in plan.steps] == ["get_order_status"]


def test_customer_placeholders_need_the_customer_lookup(tmp_path: Path) -> None:
    path = tmp_path / "tools.toml"
    path.write_text(LOYALTY_TOOL.replace("https://shop.example", "http://127.0.0.1:9"))
    with pytest.raises(ToolsConfigError, match=r"need the \[customer\] lookup"):
        load_tools_config(path)


def test_the_cache_keeps_a_found_customer_for_its_ttl() -> None:
    now = [100.0]
    cache = CustomerCache(ttl_s=60, clock=lambda: now[0])
    cache.put(1, Customer(id="7"))
    assert cache.get(1) == Customer(id="7") and cache.get(2) is None
    now[0] = 159.9
    assert cache.get(1) is not None
    now[0] = 160.0
    assert cache.get(1) is None


async def test_the_lookup_is_cached_and_owner_is_customer_checks_ownership(
    tmp_path: Path, woo: woo_tests.Woo
) -> None:
    tools, _ = files(tmp_path, woo.base)
    text = tools.read_text(encoding="utf-8")
    # The order read's ownership by the same mapping: the order's customer_id is the
    # asking customer's id at the shop.
    text = text.replace(
        "owner = \"meta_data[?key=='telegram_user_id'] | [0].value\"\n\n# WooCommerce's",
        'owner = "to_string(customer_id)"\nowner_is = "customer"\n\n# WooCommerce\'s',
    )
    tools.write_text(text, encoding="utf-8")
    config = load_tools_config(tools, env={"WOO_BASIC_AUTH": woo_tests.BASIC})
    now = [0.0]
    async with httpx.AsyncClient() as client:
        built = {t.name: t for t in build_http_tools(config, client, clock=lambda: now[0])}
        status = built["get_order_status"]

        def ctx(user: int) -> ToolContext:
            return ToolContext(user_id=user, trace_id="t", run_id="r", step_id="s")

        args = status.args_model.model_validate({"order_id": "1001"})
        assert (await status.handler(args, ctx(CUSTOMER)))["order_id"] == "1001"
        with pytest.raises(ToolFailure) as refused:
            await status.handler(args, ctx(20002))  # customer 8 asking for customer 7's order
        assert refused.value.error_type.value == "permission_denied"
        with pytest.raises(ToolFailure) as unlinked:
            await status.handler(args, ctx(UNLINKED))
        assert unlinked.value.code == "not_linked"
        points = built["loyalty_points"]
        none = points.args_model.model_validate({})
        assert await points.handler(none, ctx(CUSTOMER)) == {"points": 1250}
    lookups = [p for _, p, _, _ in woo.seen if p.startswith("/wp-json/stepwise/")]
    # CUSTOMER once (then cached), 20002 once; UNLINKED is never cached.
    assert len(lookups) == 3
