"""The questions the rule planner asks back (issue 13): which order an action is for, the
value it still needs (a new address, a refund amount), or what an id-like token means.

Each option is a short button label and the request it sends, written so that the rule
planner plans exactly that when the customer picks it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent_core import lazyre
from agent_core.interpretation import Clarification, ClarifyOption
from agent_core.models import Language
from agent_core.understanding.lexicon_intents import AMOUNT, OPTION_TEXTS, Action
from agent_core.understanding.reading import Reading

STATUS_TOOL = "get_order_status"


# "½" (NFKC: "1⁄2"), "1/2", "59÷2": a fraction is not a plain amount (asked about).
_FRACTION = lazyre.compile(r"^\s*[⁄/÷]\s*\d|^\d*\s*[⁄/÷]")


# "59%", "59k", "59 (or 60)", "59 or so", "59ish", "59 左右": not a plain amount either; nor
# "about 59", "around $59", "~59", "大概 59".
_NOT_PLAIN_AFTER = lazyre.compile(
    r"^\s*(?:%|percent|per ?cent|k(?![a-z])|千|万|百分|多)"
    r"|^\s*(?:(?:dollars?|euros?|pounds?|bucks|usd|eur|gbp|元|块|rmb)\s*)?(?:or so|-?ish|左右|上下)"
    r"|^\s*\(?\s*(?:or|或者?|to|~|-)\s*[$€£¥￥]?\d"
    # Round 5: two amounts joined ("refund A1002 20 and 30", "退 20 加 30"): which one is asked.
    r"|^\s*(?:and|&|plus|\+|,|，|和|加|再)\s*[$€£¥￥]?\d"
    # … or one amount with something added, taken off or multiplied ("59 + shipping", "59
    # plus tax", "30 each", "2x 30"): not a plain amount.
    r"|^\s*(?:\+|plus|minus|less|excl\w*|incl\w*|each|apiece|per\b|a piece|x\s*\d|x(?![a-z])|times"
    r"|\*|每个|每件|加上|减去|乘)"
    # A count, not money: "refund the 2 broken cups", "退款，2 个杯子碎了", "3 days late".
    r"|^\s*(?:个|件|只|双|条|杯|盒|瓶|包|套|台|次|天|周|号|月|年|小时|分钟|位|张|本|把|份|箱|斤|公斤"
    r"|(?:items?|pieces?|pcs|units?|times?|days?|weeks?|months?|years?|hours?|minutes?|nd|rd|th|st"
    r"|kg|cm|mm|ml)(?![a-z]))"
    r"|^\s+(?!(?:for|on|to|from|of|in|as|and|or|because|since|per|plus|dol\w*|eur\w*|pou\w*"
    r"|buc\w*|cent\w*|yuan|quid|thanks|pls|plz|please|usd|gbp)(?![a-z]))(?:[a-z]+\s+)?[a-z]{3,}s"
    r"(?![a-z])"
)
_NOT_PLAIN_BEFORE = lazyre.compile(
    # ("I'd like 20 euros back" asks for 20: "like" after "I'd" / "would" is a wish)
    r"(?:(?<![a-z])(?:about|around|approx\.?|approximately|roughly|nearly|almost|maybe|some"
    r"|(?<!['’]d )(?<!would )like)"
    r"|~|≈|约|大概|大约|差不多|估计)\s*[$€£¥￥]?\s*$"
)


# AMOUNT's named groups, one per way an amount is written (see its alternatives).
_AMOUNT_GROUPS = tuple("abcdefgh")


def amount_in(text: str) -> str | None:
    """The plain amount a text asks for; None when there is none, or more than one
    ("refund $59 and $60"): the planner asks how much."""
    values = []
    for match in AMOUNT.finditer(text):
        value = next((v for v in match.group(*_AMOUNT_GROUPS) if v), None)
        at = next((match.end(g) for g in _AMOUNT_GROUPS if match.group(g)), match.end())
        begin = next((match.start(g) for g in _AMOUNT_GROUPS if match.group(g)), match.start())
        if (
            value is None
            or _FRACTION.match(text[at:])
            or _NOT_PLAIN_AFTER.match(text[at:])
            or _NOT_PLAIN_BEFORE.search(text[:begin])
        ):
            return None
        values.append(value)
    if len({float(v) for v in values}) != 1:
        return None
    return values[0]


def option_text(
    tool: str,
    order_id: str,
    language: Language,
    address: str | None,
    amount: str | None = None,
) -> str:
    """The request an option sends, as if the customer had written it."""
    if tool == Action.REFUND and amount is None:
        tool = "request_refund_any"
    templates = OPTION_TEXTS.get(tool) or OPTION_TEXTS[STATUS_TOOL]
    return templates[language].format(order_id=order_id, address=address or "", amount=amount)


_ACTION_WORDS = {
    Language.ZH: {
        "cancel_order": "取消",
        "request_return": "退货",
        "request_refund": "退款",
        "change_address": "修改地址",
    },
    Language.EN: {
        "cancel_order": "cancel",
        "request_return": "return",
        "request_refund": "refund",
        "change_address": "change the address of",
    },
}


def which_order(
    tool: str,
    candidates: list[str],
    context_order_id: str | None,
    reading: Reading,
    language: Language,
    amount: str | None,
) -> Clarification:
    """Ask which order an action is for, with one option per order it could be; or, for
    one order, the value the action needs (a new address, a refund amount)."""
    zh = language is Language.ZH
    options = list(dict.fromkeys(candidates)) or ([context_order_id] if context_order_id else [])
    if tool == Action.REFUND and amount is None and len(candidates) == 1:
        order_id = candidates[0]
        question = (
            f"订单 {order_id} 要退款多少钱？请写上金额，例如“{order_id} 退款 59 元”。"
            if zh
            else f"How much should I refund for order {order_id}? Please write the amount, "
            f'for example "refund 59.00 for {order_id}".'
        )
        return Clarification(question=question, options=[])
    if tool == Action.ADDRESS and reading.address is None:
        question = (
            "请告诉我新的收货地址（以及订单号），我再帮你修改。"
            if zh
            else "Please send the new delivery address (and the order number) and I'll change it."
        )
        return Clarification(question=question, options=[])
    verb = _ACTION_WORDS[language].get(tool)
    if verb is None:
        verb = "处理" if zh else "do this for"
    if options:
        question = f"你想{verb}哪个订单？" if zh else f"Which order should I {verb}?"
    else:
        question = (
            f"你想{verb}哪个订单？请发给我订单号（例如 A1001）。"
            if zh
            else f"Which order should I {verb}? Please send its number (for example A1001)."
        )
    return Clarification(
        question=question,
        options=[
            ClarifyOption(
                label=order_id,
                text=option_text(tool, order_id, language, reading.address, amount),
            )
            for order_id in options[:4]
        ],
        tool=tool,
    )


def among_chat_orders(
    clarify: Clarification, chat_order_ids: Sequence[str], reading: Reading
) -> Clarification:
    """ "Which order?" about an action on "it" offers every order the chat's last message
    named, not only the first of them (`which_order` offered the chat's one order): after
    "where are A1003 and A1007?", "cancel it" asks between the two. Only for a question
    whose one option is the first of them and a text that names no order; each option is
    that option's request about another order (its template, the same address or amount)."""
    orders = list(dict.fromkeys(o.strip().upper() for o in chat_order_ids if o.strip()))
    if clarify.tool is None or reading.order_ids or len(orders) < 2:
        return clarify
    if [o.label for o in clarify.options] != orders[:1]:
        return clarify
    (only,) = clarify.options
    options = [
        ClarifyOption(label=order_id, text=only.text.replace(only.label, order_id))
        for order_id in orders[:4]
    ]
    return clarify.model_copy(update={"options": options})


def about_suspects(reading: Reading, language: Language) -> Clarification:
    token = reading.suspects[0]
    if language is Language.ZH:
        question = f"“{token}”不像是一个订单号。请发送完整的订单号（例如 A1001）。"
        if reading.repairs:
            question = f"“{token}”不像是一个订单号，你是指下面这个吗？"
    else:
        question = f'"{token}" doesn\'t look like an order number. Please send the full number (for example A1001).'
        if reading.repairs:
            question = f'"{token}" doesn\'t look like an order number. Did you mean this one?'
    return Clarification(
        question=question,
        options=[
            ClarifyOption(label=order_id, text=option_text(STATUS_TOOL, order_id, language, None))
            for order_id in reading.repairs[:4]
        ],
    )


# The example order number a question shows, the first of these the shop's order-id
# pattern (STEPWISE_ORDER_PATTERN) accepts: a digits-only shop is never told "A1001".
BUILT_IN_EXAMPLE = "A1001"
_EXAMPLES = (BUILT_IN_EXAMPLE, "1001", "10001", "100001", "A10001", "AB1001", "ORD1001", "1001A")


def example_order_id(pattern: str) -> str:
    """An order number the shop's `pattern` accepts, to show as "for example …"."""
    for candidate in _EXAMPLES:
        try:
            if re.fullmatch(pattern, candidate, re.IGNORECASE | re.ASCII):
                return candidate
        except re.error:
            break
    return BUILT_IN_EXAMPLE


def with_example(question: str, example: str) -> str:
    """`question` showing the shop's example order number instead of the built-in one."""
    return question.replace(BUILT_IN_EXAMPLE, example) if example != BUILT_IN_EXAMPLE else question
