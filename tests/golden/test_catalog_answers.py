"""Golden answers of the catalog's new tools, in zh and en, against the real demo shop.

Returns, refunds, address changes and parcel tracking, each complete, refused, skipped by
an observation rule and (for changes) paused with its Confirm prompt and button words. The
shop is the bundled seed at a fixed clock, so every text is what the demo shows. The plans
are written out (the rule planner's phrasings for these tools are issue 13's).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot

from agent_core.answers.compose import decision_labels
from agent_core.catalog.builtin import CATALOG, GET_ORDER_STATUS
from agent_core.execution.tools import ToolRegistry
from agent_core.models import Language, PlanStep, Run, RunStatus, StepTag
from storage.shop.sqlite import SqliteShop
from storage.shop.tools import shop_tools
from tests.golden._support import CUSTOMER, EN, NOW, ZH, decide, executor

LANGS = (ZH, EN)


class Shops:
    """A fresh demo shop for every run, so each language starts from the same seed."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._opened: list[SqliteShop] = []

    async def fresh(self) -> SqliteShop:
        backend = await SqliteShop.open(
            self._root / f"shop{len(self._opened)}.db", clock=lambda: NOW
        )
        self._opened.append(backend)
        return backend

    async def close(self) -> None:
        for backend in self._opened:
            await backend.close()


@pytest.fixture
async def shop(tmp_path: Path) -> AsyncIterator[Shops]:
    shops = Shops(tmp_path)
    yield shops
    await shops.close()


def plan(language: Language, tool: str, args: dict[str, Any], *, status: bool = True) -> Run:
    spec = CATALOG[tool]
    order_id = args["order_id"]
    steps = []
    if status:
        steps.append(
            PlanStep(
                id="s1",
                goal=GET_ORDER_STATUS.goal_for(language, order_id=order_id),
                tool=GET_ORDER_STATUS.name,
                args={"order_id": order_id},
                tag=StepTag.ORDER_STATUS,
            )
        )
    steps.append(
        PlanStep(
            id=f"s{len(steps) + 1}",
            goal=spec.goal_for(language, **args),
            tool=tool,
            args=args,
            tag=StepTag.ACTION,
        )
    )
    return Run(
        id=f"run-{tool}-{order_id}-{language.value}",
        trace_id="trace",
        user_id=CUSTOMER,
        chat_id=CUSTOMER,
        request_text="test",
        language=language,
        steps=steps,
        created_at=NOW,
        updated_at=NOW,
    )


async def answers(
    shops: Shops,
    tool: str,
    args: dict[str, Any],
    *,
    status: bool = True,
    decision: bool = True,
) -> dict[str, Any]:
    """Per language: the prompt and buttons if it paused, then the answer."""
    out: dict[str, Any] = {}
    for lang in LANGS:
        ex = executor(ToolRegistry(shop_tools(await shops.fresh())))
        run = await ex.start(plan(lang, tool, args, status=status))
        if run.status is RunStatus.PAUSED:
            shown = {"prompt": run.answer, "buttons": list(decision_labels(run) or ())}
            run = await ex.drive(decide(run, approved=decision))
            out[lang.value] = {**shown, "answer": run.answer}
        else:
            out[lang.value] = run.answer
    return out


async def test_refund(shop: Shops) -> None:
    assert await answers(shop, "request_refund", {"order_id": "A1002", "amount": "59"}) == snapshot(
        {
            "zh": {
                "prompt": """\
订单 A1002：已签收。
为订单 A1002 申请退款 59.00 元？
请点击下方的“确认退款”或“不退款”。\
""",
                "buttons": ["确认退款", "不退款"],
                "answer": """\
订单 A1002：已签收。
订单 A1002 的退款申请已提交：59.00 元，退款单号 F-A1002-1。\
""",
            },
            "en": {
                "prompt": """\
Order A1002 is delivered.
Request a refund of 59.00 for order A1002?
Please press "Yes, request the refund" or "No, don't" below.\
""",
                "buttons": ["Yes, request the refund", "No, don't"],
                "answer": """\
Order A1002 is delivered.
A refund of 59.00 for order A1002 has been requested (refund number F-A1002-1).\
""",
            },
        }
    )


async def test_refund_refused_skipped_and_invalid(shop: Shops) -> None:
    assert {
        "too_much": await answers(shop, "request_refund", {"order_id": "A1002", "amount": "60"}),
        "pending": await answers(shop, "request_refund", {"order_id": "A1003", "amount": "10"}),
        "cancelled": await answers(shop, "request_refund", {"order_id": "A1004", "amount": "1"}),
        "bad_amount": await answers(
            shop, "request_refund", {"order_id": "A1002", "amount": "59.001"}
        ),
        "not_yours": await answers(
            shop, "request_refund", {"order_id": "B2001", "amount": "1"}, status=False
        ),
    } == snapshot(
        {
            "too_much": {
                "zh": {
                    "prompt": """\
订单 A1002：已签收。
为订单 A1002 申请退款 60.00 元？
请点击下方的“确认退款”或“不退款”。\
""",
                    "buttons": ["确认退款", "不退款"],
                    "answer": """\
订单 A1002：已签收。
退款金额 60.00 元超过了订单 A1002 还能退的金额（最多为实付金额）。
如需帮助，请联系人工客服。\
""",
                },
                "en": {
                    "prompt": """\
Order A1002 is delivered.
Request a refund of 60.00 for order A1002?
Please press "Yes, request the refund" or "No, don't" below.\
""",
                    "buttons": ["Yes, request the refund", "No, don't"],
                    "answer": """\
Order A1002 is delivered.
A refund of 60.00 is more than order A1002 can get back (at most what was paid).
If you need more help, please contact a human agent.\
""",
                },
            },
            "pending": {
                "zh": """\
订单 A1003：待发货。
订单 A1003 还没有发货；如需退款，可以直接取消订单。\
""",
                "en": """\
Order A1003 is not shipped yet.
Order A1003 hasn't shipped yet; to get your money back, cancel it instead.\
""",
            },
            "cancelled": {
                "zh": """\
订单 A1004：已取消。
订单 A1004 已取消，款项会原路退回，无需再申请退款。\
""",
                "en": """\
Order A1004 is cancelled.
Order A1004 is cancelled, so its payment is already being refunded.\
""",
            },
            "bad_amount": {
                "zh": """\
查询订单 A1002 的物流状态：未执行。
为订单 A1002 申请退款 59.001 元：退款金额需要是大于 0 的数字，最多两位小数，例如 59.00。
如需帮助，请联系人工客服。\
""",
                "en": """\
Check the status of order A1002: not done.
Request a refund of 59.001 for order A1002: the amount must be a number above 0 with at most two decimals, like 59.00.
If you need more help, please contact a human agent.\
""",
            },
            "not_yours": {
                "zh": {
                    "prompt": """\
为订单 B2001 申请退款 1.00 元？
请点击下方的“确认退款”或“不退款”。\
""",
                    "buttons": ["确认退款", "不退款"],
                    "answer": """\
当前账号下没有找到订单 B2001。
请核对订单号，并使用下单时的账号联系我们。\
""",
                },
                "en": {
                    "prompt": """\
Request a refund of 1.00 for order B2001?
Please press "Yes, request the refund" or "No, don't" below.\
""",
                    "buttons": ["Yes, request the refund", "No, don't"],
                    "answer": """\
I couldn't find order B2001 on this account.
Please check the order number, and write from the account you ordered with.\
""",
                },
            },
        }
    )


async def test_return(shop: Shops) -> None:
    assert {
        "done": await answers(shop, "request_return", {"order_id": "A1002", "reason": "Too big"}),
        "declined": await answers(shop, "request_return", {"order_id": "A1002"}, decision=False),
        "window_closed": await answers(shop, "request_return", {"order_id": "A1006"}),
        "not_delivered": await answers(shop, "request_return", {"order_id": "A1001"}),
    } == snapshot(
        {
            "done": {
                "zh": {
                    "prompt": """\
订单 A1002：已签收。
为订单 A1002 申请退货？
请点击下方的“确认退货”或“不退货”。\
""",
                    "buttons": ["确认退货", "不退货"],
                    "answer": """\
订单 A1002：已签收。
订单 A1002 的退货申请已提交，退货单号 R-A1002-1。\
""",
                },
                "en": {
                    "prompt": """\
Order A1002 is delivered.
Request a return for order A1002?
Please press "Yes, request the return" or "No, keep the order" below.\
""",
                    "buttons": ["Yes, request the return", "No, keep the order"],
                    "answer": """\
Order A1002 is delivered.
A return for order A1002 has been requested (return number R-A1002-1).\
""",
                },
            },
            "declined": {
                "zh": {
                    "prompt": """\
订单 A1002：已签收。
为订单 A1002 申请退货？
请点击下方的“确认退货”或“不退货”。\
""",
                    "buttons": ["确认退货", "不退货"],
                    "answer": """\
订单 A1002：已签收。
好的，已按你的选择放弃「为订单 A1002 申请退货」，订单没有任何改动。\
""",
                },
                "en": {
                    "prompt": """\
Order A1002 is delivered.
Request a return for order A1002?
Please press "Yes, request the return" or "No, keep the order" below.\
""",
                    "buttons": ["Yes, request the return", "No, keep the order"],
                    "answer": """\
Order A1002 is delivered.
OK, I did not "request a return for order A1002". Nothing was changed.\
""",
                },
            },
            "window_closed": {
                "zh": {
                    "prompt": """\
订单 A1006：已签收。
为订单 A1006 申请退货？
请点击下方的“确认退货”或“不退货”。\
""",
                    "buttons": ["确认退货", "不退货"],
                    "answer": """\
订单 A1006：已签收。
订单 A1006 已超过签收后的退货期限，不能再申请退货。
如需帮助，请联系人工客服。\
""",
                },
                "en": {
                    "prompt": """\
Order A1006 is delivered.
Request a return for order A1006?
Please press "Yes, request the return" or "No, keep the order" below.\
""",
                    "buttons": ["Yes, request the return", "No, keep the order"],
                    "answer": """\
Order A1006 is delivered.
Order A1006 is past its return window, so it can no longer be returned.
If you need more help, please contact a human agent.\
""",
                },
            },
            "not_delivered": {
                "zh": """\
订单 A1001：运输中，预计 2026-12-03 送达。
订单 A1001 还没有签收，签收后才能申请退货。\
""",
                "en": """\
Order A1001 is on its way, expected 2026-12-03.
Order A1001 hasn't been delivered yet; a return can be requested once it has.\
""",
            },
        }
    )


async def test_address(shop: Shops) -> None:
    address = "7 Harbour Road, Ningbo"
    assert {
        "done": await answers(shop, "change_address", {"order_id": "A1007", "address": address}),
        "shipped": await answers(shop, "change_address", {"order_id": "A1001", "address": address}),
        "refused_without_status": await answers(
            shop, "change_address", {"order_id": "A1002", "address": address}, status=False
        ),
        "bad_address": await answers(
            shop, "change_address", {"order_id": "A1007", "address": "Ningbo\nRoom 1"}
        ),
    } == snapshot(
        {
            "done": {
                "zh": {
                    "prompt": """\
订单 A1007：待发货。
把订单 A1007 的收货地址改为“7 Harbour Road, Ningbo”？
请点击下方的“确认修改”或“不修改”。\
""",
                    "buttons": ["确认修改", "不修改"],
                    "answer": """\
订单 A1007：待发货。
订单 A1007 的收货地址已改为：7 Harbour Road, Ningbo。\
""",
                },
                "en": {
                    "prompt": """\
Order A1007 is not shipped yet.
Change the delivery address of order A1007 to "7 Harbour Road, Ningbo"?
Please press "Yes, change it" or "No, keep the old one" below.\
""",
                    "buttons": ["Yes, change it", "No, keep the old one"],
                    "answer": """\
Order A1007 is not shipped yet.
Order A1007 will now be delivered to: 7 Harbour Road, Ningbo.\
""",
                },
            },
            "shipped": {
                "zh": """\
订单 A1001：运输中，预计 2026-12-03 送达。
订单 A1001 已经发货，收货地址不能再修改。\
""",
                "en": """\
Order A1001 is on its way, expected 2026-12-03.
Order A1001 has already shipped, so its delivery address can no longer be changed.\
""",
            },
            "refused_without_status": {
                "zh": {
                    "prompt": """\
把订单 A1002 的收货地址改为“7 Harbour Road, Ningbo”？
请点击下方的“确认修改”或“不修改”。\
""",
                    "buttons": ["确认修改", "不修改"],
                    "answer": """\
订单 A1002 已经发货或已结束，收货地址不能再修改。
如需帮助，请联系人工客服。\
""",
                },
                "en": {
                    "prompt": """\
Change the delivery address of order A1002 to "7 Harbour Road, Ningbo"?
Please press "Yes, change it" or "No, keep the old one" below.\
""",
                    "buttons": ["Yes, change it", "No, keep the old one"],
                    "answer": """\
Order A1002 has already shipped or is closed, so its delivery address can no longer be changed.
If you need more help, please contact a human agent.\
""",
                },
            },
            "bad_address": {
                "zh": """\
查询订单 A1007 的物流状态：未执行。
修改订单 A1007 的收货地址：地址需要 5 到 200 个字，写在一行里，不能包含控制字符。
如需帮助，请联系人工客服。\
""",
                "en": """\
Check the status of order A1007: not done.
Change the delivery address of order A1007: the address must be 5 to 200 characters on one line.
If you need more help, please contact a human agent.\
""",
            },
        }
    )


async def test_track_parcel(shop: Shops) -> None:
    assert {
        "shipping": await answers(shop, "track_parcel", {"order_id": "A1005"}, status=False),
        "delivered": await answers(shop, "track_parcel", {"order_id": "A1002"}),
        "pending": await answers(shop, "track_parcel", {"order_id": "A1003"}),
        "no_events": await answers(shop, "track_parcel", {"order_id": "A1007"}, status=False),
    } == snapshot(
        {
            "shipping": {
                "zh": """\
订单 A1005 的包裹（JD Logistics，运单号 JD0087766554）最新动态：
• 2026-11-30 07:55 苏州：已到达本地派送站
• 2026-11-29 12:20 北京：已离开分拣中心\
""",
                "en": """\
Latest on the parcel of order A1005 (JD Logistics, JD0087766554):
• 2026-11-30 07:55, Suzhou: Arrived at the local delivery station
• 2026-11-29 12:20, Beijing: Departed the sorting centre\
""",
            },
            "delivered": {
                "zh": """\
订单 A1002：已签收。
订单 A1002 的包裹（SF Express，运单号 SF1400230002）最新动态：
• 2026-11-27 16:30 上海：已签收，签收人：本人
• 2026-11-27 09:10 上海：派送中\
""",
                "en": """\
Order A1002 is delivered.
Latest on the parcel of order A1002 (SF Express, SF1400230002):
• 2026-11-27 16:30, Shanghai: Delivered, signed for by the customer
• 2026-11-27 09:10, Shanghai: Out for delivery\
""",
            },
            "pending": {
                "zh": """\
订单 A1003：待发货。
订单 A1003 还没有发货，暂时没有物流信息。\
""",
                "en": """\
Order A1003 is not shipped yet.
Order A1003 hasn't shipped yet, so there is no parcel to track.\
""",
            },
            "no_events": {
                "zh": """\
订单 A1007 暂时还没有物流动态。
如需帮助，请联系人工客服。\
""",
                "en": """\
There are no tracking events for order A1007 yet.
If you need more help, please contact a human agent.\
""",
            },
        }
    )
