"""Golden zh/en texts of the answers issue 13 added: a clarifying question, a request for a
person, what no tool serves, an earlier order used for a read, and orders beyond the step
cap. Real plans from the rule planner, scripted tools, a fixed clock."""

from __future__ import annotations

from inline_snapshot import snapshot

from agent_core.models import Language, PlanStep, Run
from agent_core.understanding.planner import PlanRequest, RuleBasedPlanner
from tests.golden._support import CUSTOMER, EN, NOW, ZH, executor, tools

REQUESTS: dict[str, dict[Language, str]] = {
    "clarify_which_order": {
        ZH: "我有 A1003 和 A1005 两个单，把它取消了吧",
        EN: "I ordered A1001 and A1005, cancel it",
    },
    "clarify_no_order": {ZH: "帮我取消订单", EN: "Please cancel my order"},
    "clarify_refund_amount": {ZH: "A1002 申请退款", EN: "I want a refund for A1002"},
    "clarify_id": {ZH: "订单 AI001 到哪了", EN: "where is A10O1?"},
    "handoff": {ZH: "转人工", EN: "I want to talk to a real person"},
    # (Until round 8 of issue 21 an invoice request; now the invoices FAQ answers that.)
    "unsupported_only": {ZH: "帮我给 A1002 用优惠码 SAVE10", EN: "apply the code SAVE10 to A1002"},
    "unsupported_and_status": {
        ZH: "A1001 到哪了？顺便把付款方式改成支付宝",
        EN: "where is A1001? and please switch my payment method to PayPal",
    },
    "context_read": {ZH: "那它现在到哪了？", EN: "where is it now?"},
    "not_covered": {
        ZH: "A1001、A1002、A1003、A1004 和 A1005 分别到哪了",
        EN: "check A1001, A1002, A1003, A1004 and A1005",
    },
}


async def answer(kind: str, language: Language) -> str:
    text = REQUESTS[kind][language]
    last = "A1001" if kind == "context_read" else None
    draft = RuleBasedPlanner().draft(
        PlanRequest(text=text, language_hint=language.value, last_order_id=last)
    )
    run = Run(
        id="run1",
        trace_id="trace-run1",
        user_id=CUSTOMER,
        chat_id=CUSTOMER,
        request_text=text,
        language=draft.language,
        steps=[
            PlanStep(id=f"s{n}", goal=d.goal, tool=d.tool, args=d.args, tag=d.tag, max_retries=2)
            for n, d in enumerate(draft.steps, start=1)
        ],
        refusal=draft.refusal.value if draft.refusal else None,
        interpretation=draft.interpretation,
        created_at=NOW,
        updated_at=NOW,
    )
    # The scripted status tool answers for each order read, in plan order.
    orders = [d.args["order_id"] for d in draft.steps if d.tool == "get_order_status"]
    status = [{"order_id": o, "status": "shipping", "eta": "2026-12-03"} for o in orders]
    registry, _ = tools(language, status=status or [{"order_id": "A1001", "status": "shipping"}])
    finished = await executor(registry).start(run)
    return finished.answer or ""


async def both(kind: str) -> dict[str, str]:
    return {lang.value: await answer(kind, lang) for lang in (ZH, EN)}


async def test_clarifying_questions() -> None:
    assert {
        kind: await both(kind)
        for kind in (
            "clarify_which_order",
            "clarify_no_order",
            "clarify_refund_amount",
            "clarify_id",
        )
    } == snapshot(
        {
            "clarify_which_order": {
                "zh": "你想取消哪个订单？",
                "en": "Which order should I cancel?",
            },
            "clarify_no_order": {
                "zh": "你想取消哪个订单？请发给我订单号（例如 A1001）。",
                "en": "Which order should I cancel? Please send its number (for example A1001).",
            },
            "clarify_refund_amount": {
                "zh": "订单 A1002 要退款多少钱？请写上金额，例如“A1002 退款 59 元”。",
                "en": 'How much should I refund for order A1002? Please write the amount, for example "refund 59.00 for A1002".',
            },
            "clarify_id": {
                "zh": "“AI001”不像是一个订单号，你是指下面这个吗？",
                "en": '"A10O1" doesn\'t look like an order number. Did you mean this one?',
            },
        }
    )


async def test_handoff() -> None:
    assert await both("handoff") == snapshot(
        {
            "zh": "好的，已记录你想联系人工客服，我们的同事会在这里跟进回复你。",
            "en": "I've noted that you'd like to talk to a person. Someone from our team will follow up with you here.",
        }
    )


async def test_unsupported() -> None:
    assert {
        kind: await both(kind) for kind in ("unsupported_only", "unsupported_and_status")
    } == snapshot(
        {
            "unsupported_only": {
                "zh": """\
这里无法帮你处理：优惠码和折扣。
如需人工帮助，请回复“转人工”，我会转交给我们的同事。
我可以帮你：查询订单状态（“订单 A1001 到哪了”）；查询售后政策（退货、配送、延迟补偿）；取消订单（“帮我取消订单 A1001”）；申请退货（“订单 A1002 我要退货”）；申请退款（“订单 A1002 退款 59 元”）；修改收货地址（发货前）；查看包裹轨迹（“订单 A1001 的物流轨迹”）。其他问题请联系人工客服。\
""",
                "en": """\
I can't help with discount codes here.
If you'd like a person to help with that, write "talk to a person" and I'll pass it on.
I can help you track an order ("where is order A1001?"), look up our policies (refunds, shipping, delay compensation), cancel an order ("cancel order A1001"), request a return ("return order A1002"), request a refund ("refund 59 for order A1002"), change a delivery address (before it ships), or follow a parcel's tracking ("track the parcel of A1001"). For anything else, please contact a human agent.\
""",
            },
            "unsupported_and_status": {
                "zh": """\
订单 A1001：运输中，预计 2026-12-03 送达。
这里无法帮你处理：更改付款方式。
如需人工帮助，请回复“转人工”，我会转交给我们的同事。\
""",
                "en": """\
Order A1001 is on its way, expected 2026-12-03.
I can't help with changing how an order is paid here.
If you'd like a person to help with that, write "talk to a person" and I'll pass it on.\
""",
            },
        }
    )


async def test_an_earlier_order_is_said_and_orders_beyond_the_cap_are_named() -> None:
    assert {kind: await both(kind) for kind in ("context_read", "not_covered")} == snapshot(
        {
            "context_read": {
                "zh": """\
关于你之前问过的订单 A1001：
订单 A1001：运输中，预计 2026-12-03 送达。\
""",
                "en": """\
About order A1001, the one you asked about earlier:
Order A1001 is on its way, expected 2026-12-03.\
""",
            },
            "not_covered": {
                "zh": """\
订单 A1001：运输中，预计 2026-12-03 送达。
订单 A1002：运输中，预计 2026-12-03 送达。
订单 A1003：运输中，预计 2026-12-03 送达。
订单 A1004：运输中，预计 2026-12-03 送达。
每次最多处理 4 个步骤，这次没有处理：A1005。请单独再问一次。\
""",
                "en": """\
Order A1001 is on its way, expected 2026-12-03.
Order A1002 is on its way, expected 2026-12-03.
Order A1003 is on its way, expected 2026-12-03.
Order A1004 is on its way, expected 2026-12-03.
I handle at most 4 steps per request, so this did not cover: A1005. Please ask about it separately.\
""",
            },
        }
    )
