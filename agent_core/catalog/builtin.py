"""The tools the agent knows, declared once: the built-in catalog.

One `ToolSpec` (see `agent_core.catalog.spec`) per tool: what it does, its arguments, risk and
approver, its result contract, how a result is shown, what a pause asks, how a refusal is
explained, and the observation rules that skip later steps, each with its reason. The demo
shop (`shop.shop_tools`) binds a handler to each, the HTTP adapter (`agent_core.http`)
configures a request for each, the planner writes its steps' goals from them and the
answers are rendered from them, so a tool's name, wording and risk are never written twice.
A TOML file may declare more tools (`agent_core.http.declare`); `catalog_of` merges them.

It is one table of data, and long only because every text is written in two languages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from agent_core.catalog.contracts import (
    AddressArgs,
    AddressResult,
    CancelResult,
    OrderArgs,
    OrderResult,
    ParcelResult,
    PolicyArgs,
    PolicyEntry,
    PolicyLang,
    RefundArgs,
    RefundResult,
    ReturnArgs,
    ReturnResult,
)
from agent_core.catalog.spec import (
    Approver,
    ResultView,
    RuleBook,
    Template,
    Texts,
    ToolSpec,
    catalog_of,
    rule,
)
from agent_core.models import Risk, StepTag

__all__ = [
    "CANCEL_ORDER",
    "CATALOG",
    "CHANGE_ADDRESS",
    "GET_ORDER_STATUS",
    "REQUEST_REFUND",
    "REQUEST_RETURN",
    "SEARCH_POLICY",
    "TRACK_PARCEL",
    "OrderArgs",
    "PolicyArgs",
    "PolicyLang",
    "Texts",
    "ToolSpec",
    "catalog_of",
    "rules_of",
]

STATUS = "get_order_status"  # the step whose observations the rules read

REASON_HINT: Final = Texts(
    zh="原因最多 300 个字，不能包含换行或控制字符",
    en="the reason can be at most 300 characters on one line",
)

GET_ORDER_STATUS: Final = ToolSpec(
    name=STATUS,
    offer=Texts(
        zh="查询订单状态（“订单 A1001 到哪了”）", en='track an order ("where is order A1001?")'
    ),
    description=Texts(
        zh="查询顾客本人某个订单的状态、预计送达日期和商品。",
        en=(
            "Look up the status, estimated delivery date and items of one of the customer's "
            "own orders."
        ),
    ),
    args_model=OrderArgs,
    risk=Risk.READ,
    goal=Texts(zh="查询订单 {order_id} 的物流状态", en="Check the status of order {order_id}"),
    result_model=OrderResult,
    state_field="status",
    bounds={"order_id": 64, "status": 40, "eta": 40},
    view=ResultView(
        lines=(
            Template(
                zh="订单 {order_id}：{status}，预计 {eta} 送达。",
                en="Order {order_id} is {status}, expected {eta}.",
                when={"status": ("shipping",)},
            ),
            Template(zh="订单 {order_id}：{status}。", en="Order {order_id} is {status}."),
        ),
        labels={
            "status": {
                "pending": Texts(zh="待发货", en="not shipped yet"),
                "paid": Texts(zh="已付款，待发货", en="paid and not shipped yet"),
                "shipping": Texts(zh="运输中", en="on its way"),
                "delivered": Texts(zh="已签收", en="delivered"),
                "cancelled": Texts(zh="已取消", en="cancelled"),
                "refunded": Texts(zh="已退款", en="refunded"),
            }
        },
    ),
    probe_args={"order_id": "A1001"},
)

SEARCH_POLICY: Final = ToolSpec(
    name="search_policy",
    offer=Texts(
        zh="查询售后政策（退货、配送、延迟补偿）",
        en="look up our policies (refunds, shipping, delay compensation)",
    ),
    description=Texts(
        zh="按主题查找店铺政策（延迟补偿、退货退款、配送、取消、换货），支持中文和英文。",
        en=(
            "Find the shop policies (delay compensation, returns and refunds, shipping, "
            "cancellation, exchanges) that match a topic, in Chinese or English."
        ),
    ),
    args_model=PolicyArgs,
    risk=Risk.READ,
    goal=Texts(zh="查询{query}政策", en="Look up the {query} policy"),
    result_model=PolicyEntry,
    result_is_list=True,
    bounds={"title": 120, "text": 1500},
    view=ResultView(
        each="",
        item_lines=(
            Template(zh="【{title}】{text}", en="{title}: {text}"),
            Template(zh="{title}", en="{title}"),
            Template(zh="{text}", en="{text}"),
        ),
        max_items=3,
    ),
    empty=Texts(
        zh="没有找到关于“{query}”的明确政策，所以我无法确认，不会替你猜测。",
        en="I found no clear policy about \"{query}\", so I can't confirm it and won't guess.",
    ),
    skip_rules=(
        rule(
            "delivered_needs_no_compensation",
            after=STATUS,
            field="status",
            values={"delivered"},
            skip_tag=StepTag.DELAY_COMPENSATION,
            reason=Texts(
                zh="订单 {order_id} 已签收，不需要再查延迟补偿。",
                en="Order {order_id} has been delivered, so delay compensation does not apply.",
            ),
        ),
        rule(
            "cancelled_needs_no_compensation",
            after=STATUS,
            field="status",
            values={"cancelled"},
            skip_tag=StepTag.DELAY_COMPENSATION,
            reason=Texts(
                zh="订单 {order_id} 已取消，不涉及延迟补偿。",
                en="Order {order_id} is cancelled, so delay compensation does not apply.",
            ),
        ),
        rule(
            "refunded_needs_no_compensation",
            after=STATUS,
            field="status",
            values={"refunded"},
            skip_tag=StepTag.DELAY_COMPENSATION,
            reason=Texts(
                zh="订单 {order_id} 已退款，不涉及延迟补偿。",
                en="Order {order_id} has been refunded, so delay compensation does not apply.",
            ),
        ),
    ),
    probe_args={"query": "refund"},
)

CANCEL_ORDER: Final = ToolSpec(
    name="cancel_order",
    offer=Texts(zh="取消订单（“帮我取消订单 A1001”）", en='cancel an order ("cancel order A1001")'),
    description=Texts(
        zh="在顾客确认后，取消顾客本人尚未签收的订单。",
        en=(
            "Cancel one of the customer's own orders that has not been delivered yet, "
            "after the customer has confirmed."
        ),
    ),
    args_model=OrderArgs,
    risk=Risk.HIGH,
    approval=Approver.CUSTOMER,
    goal=Texts(zh="取消订单 {order_id}", en="Cancel order {order_id}"),
    result_model=CancelResult,
    state_field="status",
    bounds={"order_id": 64, "status": 40},
    view=ResultView(
        lines=(
            Template(
                zh="订单 {order_id} 已取消。",
                en="Order {order_id} has been cancelled.",
                when={"status": ("cancelled",)},
            ),
        )
    ),
    confirm=Texts(
        zh="取消订单 {order_id}：这一步会修改你的订单，需要你确认后才会执行。",
        en="Cancel order {order_id}: this changes your order, so I need your confirmation first.",
    ),
    approve_label=Texts(zh="确认取消", en="Yes, cancel {order_id}"),
    decline_label=Texts(zh="不取消", en="No, keep it"),
    refusals={
        "": Texts(
            zh="订单 {order_id} 当前的状态已经不能取消。",
            en="Order {order_id} can no longer be cancelled in its current state.",
        )
    },
    skip_rules=(
        rule(
            "delivered_cannot_be_cancelled",
            after=STATUS,
            field="status",
            values={"delivered"},
            skip_tag=StepTag.CANCEL,
            reason=Texts(
                zh="订单 {order_id} 已签收，无法取消；如需退货，可以问我“退货政策是什么”。",
                en=(
                    "Order {order_id} has already been delivered, so it can't be cancelled; "
                    'to send it back, ask me "what is your return policy".'
                ),
            ),
        ),
        rule(
            "already_cancelled",
            after=STATUS,
            field="status",
            values={"cancelled"},
            skip_tag=StepTag.CANCEL,
            reason=Texts(
                zh="订单 {order_id} 已经是取消状态，无需再次取消。",
                en="Order {order_id} is already cancelled; nothing more to do.",
            ),
        ),
        rule(
            "refunded_cannot_be_cancelled",
            after=STATUS,
            field="status",
            values={"refunded"},
            skip_tag=StepTag.CANCEL,
            reason=Texts(
                zh="订单 {order_id} 已经退款，无需取消。",
                en="Order {order_id} has already been refunded; there is nothing to cancel.",
            ),
        ),
    ),
)

REQUEST_RETURN: Final = ToolSpec(
    name="request_return",
    offer=Texts(
        zh="申请退货（“订单 A1002 我要退货”）", en='request a return ("return order A1002")'
    ),
    description=Texts(
        zh="为顾客本人已签收、仍在退货期内的订单申请退货，需顾客确认；返回退货单号。",
        en=(
            "Request a return of one of the customer's own delivered orders within the "
            "return window, after the customer has confirmed; gives a return number."
        ),
    ),
    args_model=ReturnArgs,
    risk=Risk.HIGH,
    approval=Approver.CUSTOMER,
    goal=Texts(zh="为订单 {order_id} 申请退货", en="Request a return for order {order_id}"),
    result_model=ReturnResult,
    bounds={"order_id": 64, "return_id": 64},
    view=ResultView(
        lines=(
            Template(
                zh="订单 {order_id} 的退货申请已提交，退货单号 {return_id}。",
                en="A return for order {order_id} has been requested (return number {return_id}).",
            ),
        )
    ),
    confirm=Texts(zh="为订单 {order_id} 申请退货？", en="Request a return for order {order_id}?"),
    approve_label=Texts(zh="确认退货", en="Yes, request the return"),
    decline_label=Texts(zh="不退货", en="No, keep the order"),
    refusals={
        "not_delivered": Texts(
            zh="订单 {order_id} 还没有签收，暂时不能退货。",
            en="Order {order_id} hasn't been delivered yet, so it can't be returned.",
        ),
        "window_closed": Texts(
            zh="订单 {order_id} 已超过签收后的退货期限，不能再申请退货。",
            en="Order {order_id} is past its return window, so it can no longer be returned.",
        ),
        "already_requested": Texts(
            zh="订单 {order_id} 已经申请过退货。",
            en="A return for order {order_id} has already been requested.",
        ),
        "": Texts(
            zh="订单 {order_id} 目前不能申请退货。",
            en="Order {order_id} can't be returned right now.",
        ),
    },
    arg_hints={"reason": REASON_HINT},
    skip_rules=(
        rule(
            "return_needs_delivery",
            after=STATUS,
            field="status",
            values={"pending", "paid", "shipping"},
            skip_tool="request_return",
            reason=Texts(
                zh="订单 {order_id} 还没有签收，签收后才能申请退货。",
                en=(
                    "Order {order_id} hasn't been delivered yet; a return can be requested "
                    "once it has."
                ),
            ),
        ),
        rule(
            "cancelled_needs_no_return",
            after=STATUS,
            field="status",
            values={"cancelled"},
            skip_tool="request_return",
            reason=Texts(
                zh="订单 {order_id} 已取消，无需退货。",
                en="Order {order_id} is cancelled, so there is nothing to return.",
            ),
        ),
        rule(
            "refunded_needs_no_return",
            after=STATUS,
            field="status",
            values={"refunded"},
            skip_tool="request_return",
            reason=Texts(
                zh="订单 {order_id} 已经退款，无法再申请退货；如有疑问请联系人工客服。",
                en="Order {order_id} has already been refunded, so a return can't be requested; a person can help with anything else.",
            ),
        ),
    ),
)

REQUEST_REFUND: Final = ToolSpec(
    name="request_refund",
    offer=Texts(
        zh="申请退款（“订单 A1002 退款 59 元”）",
        en='request a refund ("refund 59 for order A1002")',
    ),
    description=Texts(
        zh="为顾客本人已发货或已签收的订单申请退款，金额不超过实付金额，需顾客确认；返回退款单号。",
        en=(
            "Request a refund of at most the amount paid for one of the customer's own "
            "shipped or delivered orders, after the customer has confirmed; gives a refund "
            "number."
        ),
    ),
    args_model=RefundArgs,
    risk=Risk.HIGH,
    approval=Approver.CUSTOMER,
    goal=Texts(
        zh="为订单 {order_id} 申请退款 {amount} 元",
        en="Request a refund of {amount} for order {order_id}",
    ),
    result_model=RefundResult,
    bounds={"order_id": 64, "refund_id": 64, "amount": 20},
    view=ResultView(
        lines=(
            # A backend that only records the refund (WooCommerce with api_refund = false)
            # says so with `money_moved: false`: the customer must not wait for the money.
            Template(
                zh=(
                    "订单 {order_id} 的退款已登记：{amount} 元，退款单号 {refund_id}。"
                    "这笔钱不会自动退回，店铺会另行退款给你。"
                ),
                en=(
                    "A refund of {amount} for order {order_id} has been recorded (refund "
                    "number {refund_id}). No money has moved yet: the shop pays it back "
                    "separately."
                ),
                when={"money_moved": ("False",)},
            ),
            Template(
                zh="订单 {order_id} 的退款申请已提交：{amount} 元，退款单号 {refund_id}。",
                en=(
                    "A refund of {amount} for order {order_id} has been requested "
                    "(refund number {refund_id})."
                ),
            ),
        )
    ),
    confirm=Texts(
        zh="为订单 {order_id} 申请退款 {amount} 元？",
        en="Request a refund of {amount} for order {order_id}?",
    ),
    approve_label=Texts(zh="确认退款", en="Yes, request the refund"),
    decline_label=Texts(zh="不退款", en="No, don't"),
    refusals={
        "amount_too_high": Texts(
            zh="退款金额 {amount} 元超过了订单 {order_id} 还能退的金额（最多为实付金额）。",
            en=(
                "A refund of {amount} is more than order {order_id} can get back "
                "(at most what was paid)."
            ),
        ),
        "not_shipped": Texts(
            zh="订单 {order_id} 还没有发货；如需退款，可以直接取消订单。",
            en="Order {order_id} hasn't shipped yet; to get your money back, cancel it instead.",
        ),
        "already_refunded": Texts(
            zh="订单 {order_id} 已取消，款项会原路退回，无需再申请退款。",
            en="Order {order_id} is cancelled, so its payment is already being refunded.",
        ),
        "": Texts(
            zh="订单 {order_id} 目前不能申请这笔退款。",
            en="This refund can't be requested for order {order_id} right now.",
        ),
    },
    arg_hints={
        "amount": Texts(
            zh="退款金额需要是大于 0 的数字，最多两位小数，例如 59.00",
            en="the amount must be a number above 0 with at most two decimals, like 59.00",
        ),
        "reason": REASON_HINT,
    },
    skip_rules=(
        rule(
            "refund_needs_shipping",
            after=STATUS,
            field="status",
            values={"pending"},
            skip_tool="request_refund",
            reason=Texts(
                zh="订单 {order_id} 还没有发货；如需退款，可以直接取消订单。",
                en=(
                    "Order {order_id} hasn't shipped yet; to get your money back, cancel it "
                    "instead."
                ),
            ),
        ),
        rule(
            "cancelled_is_refunded",
            after=STATUS,
            field="status",
            values={"cancelled"},
            skip_tool="request_refund",
            reason=Texts(
                zh="订单 {order_id} 已取消，款项会原路退回，无需再申请退款。",
                en="Order {order_id} is cancelled, so its payment is already being refunded.",
            ),
        ),
        rule(
            "already_refunded",
            after=STATUS,
            field="status",
            values={"refunded"},
            skip_tool="request_refund",
            reason=Texts(
                zh="订单 {order_id} 已经全额退款，无需再申请退款。",
                en="Order {order_id} has already been refunded in full; nothing more to request.",
            ),
        ),
    ),
)

CHANGE_ADDRESS: Final = ToolSpec(
    name="change_address",
    offer=Texts(zh="修改收货地址（发货前）", en="change a delivery address (before it ships)"),
    description=Texts(
        zh="在订单发货前，修改顾客本人订单的收货地址，需顾客确认。",
        en=(
            "Change the delivery address of one of the customer's own orders before it "
            "ships, after the customer has confirmed."
        ),
    ),
    args_model=AddressArgs,
    risk=Risk.HIGH,
    approval=Approver.CUSTOMER,
    goal=Texts(
        zh="修改订单 {order_id} 的收货地址", en="Change the delivery address of order {order_id}"
    ),
    result_model=AddressResult,
    bounds={"order_id": 64, "address": 200},
    view=ResultView(
        lines=(
            Template(
                zh="订单 {order_id} 的收货地址已改为：{address}。",
                en="Order {order_id} will now be delivered to: {address}.",
            ),
        )
    ),
    confirm=Texts(
        zh="把订单 {order_id} 的收货地址改为“{address}”？",
        en='Change the delivery address of order {order_id} to "{address}"?',
    ),
    approve_label=Texts(zh="确认修改", en="Yes, change it"),
    decline_label=Texts(zh="不修改", en="No, keep the old one"),
    refusals={
        "not_pending": Texts(
            zh="订单 {order_id} 已经发货或已结束，收货地址不能再修改。",
            en=(
                "Order {order_id} has already shipped or is closed, so its delivery address "
                "can no longer be changed."
            ),
        ),
        "": Texts(
            zh="订单 {order_id} 的收货地址现在不能修改。",
            en="The delivery address of order {order_id} can't be changed right now.",
        ),
    },
    arg_hints={
        "address": Texts(
            zh="地址需要 5 到 200 个字，写在一行里，不能包含控制字符",
            en="the address must be 5 to 200 characters on one line",
        ),
        # A shop that stores the address in parts (`address_parts` in the tools file).
        "address_parts": Texts(
            zh="请按“街道门牌, 城市, 邮编”的格式重新发送新地址，例如：海港路 7 号, 宁波, 315000",
            en=(
                "please send the new address again as street, city, postcode, for example: "
                "7 Harbour Road, Ningbo, 315000"
            ),
        ),
    },
    skip_rules=(
        rule(
            "shipped_address_is_final",
            after=STATUS,
            field="status",
            values={"shipping", "delivered"},
            skip_tool="change_address",
            reason=Texts(
                zh="订单 {order_id} 已经发货，收货地址不能再修改。",
                en=(
                    "Order {order_id} has already shipped, so its delivery address can no "
                    "longer be changed."
                ),
            ),
        ),
        rule(
            "cancelled_needs_no_address",
            after=STATUS,
            field="status",
            values={"cancelled"},
            skip_tool="change_address",
            reason=Texts(
                zh="订单 {order_id} 已取消，无需修改地址。",
                en="Order {order_id} is cancelled, so there is no address to change.",
            ),
        ),
        rule(
            "refunded_needs_no_address",
            after=STATUS,
            field="status",
            values={"refunded"},
            skip_tool="change_address",
            reason=Texts(
                zh="订单 {order_id} 已退款，无需修改地址。",
                en="Order {order_id} has been refunded, so there is no address to change.",
            ),
        ),
    ),
)

TRACK_PARCEL: Final = ToolSpec(
    name="track_parcel",
    offer=Texts(
        zh="查看包裹轨迹（“订单 A1001 的物流轨迹”）",
        en='follow a parcel\'s tracking ("track the parcel of A1001")',
    ),
    description=Texts(
        zh="查询顾客本人已发货订单的包裹轨迹（承运商最新的几条动态）。",
        en="Show the carrier's latest tracking events for one of the customer's own shipped orders.",
    ),
    args_model=OrderArgs,
    risk=Risk.READ,
    goal=Texts(zh="查询订单 {order_id} 的包裹轨迹", en="Track the parcel of order {order_id}"),
    result_model=ParcelResult,
    empty_field="events",
    bounds={
        "order_id": 64,
        "carrier": 60,
        "tracking_number": 64,
        "at": 40,
        "place": 80,
        "place_zh": 80,
    },
    view=ResultView(
        lines=(
            Template(
                zh="订单 {order_id} 的包裹（{carrier}，运单号 {tracking_number}）最新动态：",
                en="Latest on the parcel of order {order_id} ({carrier}, {tracking_number}):",
            ),
            Template(
                zh="订单 {order_id} 的包裹最新动态：",
                en="Latest on the parcel of order {order_id}:",
            ),
        ),
        each="events",
        item_lines=(
            # In Chinese where the carrier offers it; otherwise its own words, marked so.
            Template(zh="• {at} {place_zh}：{text_zh}", en="• {at}, {place}: {text}"),
            Template(zh="• {at}：{text_zh}", en="• {at}: {text}"),
            Template(zh="• {at} {place}：{text}（承运商原文）", en="• {at}, {place}: {text}"),
            Template(zh="• {at}：{text}（承运商原文）", en="• {at}: {text}"),
        ),
        max_items=3,
    ),
    empty=Texts(
        zh="订单 {order_id} 暂时还没有物流动态。",
        en="There are no tracking events for order {order_id} yet.",
    ),
    skip_rules=(
        rule(
            "not_shipped_no_parcel",
            after=STATUS,
            field="status",
            values={"pending", "paid"},
            skip_tool="track_parcel",
            reason=Texts(
                zh="订单 {order_id} 还没有发货，暂时没有物流信息。",
                en="Order {order_id} hasn't shipped yet, so there is no parcel to track.",
            ),
        ),
        rule(
            "cancelled_no_parcel",
            after=STATUS,
            field="status",
            values={"cancelled"},
            skip_tool="track_parcel",
            reason=Texts(
                zh="订单 {order_id} 已取消，没有需要跟踪的包裹。",
                en="Order {order_id} is cancelled, so there is no parcel to track.",
            ),
        ),
        rule(
            "refunded_no_parcel",
            after=STATUS,
            field="status",
            values={"refunded"},
            skip_tool="track_parcel",
            reason=Texts(
                zh="订单 {order_id} 已退款，没有包裹可查。",
                en="Order {order_id} has been refunded, so there is no parcel to track.",
            ),
        ),
    ),
    probe_args={"order_id": "A1001"},
)

CATALOG: Final[Mapping[str, ToolSpec]] = catalog_of(
    (
        GET_ORDER_STATUS,
        SEARCH_POLICY,
        CANCEL_ORDER,
        REQUEST_RETURN,
        REQUEST_REFUND,
        CHANGE_ADDRESS,
        TRACK_PARCEL,
    )
)


def rules_of(specs: Iterable[ToolSpec]) -> RuleBook:
    """Every observation rule the catalog declares, in catalog order (indexed once)."""
    return RuleBook(r for spec in specs for r in spec.skip_rules)
