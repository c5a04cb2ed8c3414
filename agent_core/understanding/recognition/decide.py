"""What a recognised intent may lead to: a pure decision table over the ranked matches.

Recognition runs when the rule reading found nothing explicit (only status reads of orders
named with nothing asked, a greeting, nothing at all), when it found only things no tool
serves, or when it asked "which order?" with no order anywhere in view. What each outcome
may do, from safest to riskiest:

- a request for a person, an FAQ answer or a can't-do answer: given when recognised
  (reads nothing, changes nothing); a person only when the text does not negate it;
- a read (status, parcel): the orders named, else the chat's order, else "which order?";
- an action: only with a clean request (no negation, question, retraction or somebody
  else's wish), exactly one order named, a high score and a clear margin over the next
  intent; no order ⇒ "which order?"; anything less ⇒ offered as a choice, never done;
- below the threshold, or "what can you do?": choices.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from agent_core import lazyre
from agent_core.understanding.lexicon_intents import NEGATORS_EN, NEGATORS_ZH
from agent_core.understanding.recognition.intents import IntentDef, Kind
from agent_core.understanding.recognition.normalise import POLITE, QUESTION, is_question
from agent_core.understanding.recognition.precision import (
    RETRACTION,
    asks_policy,
    negated_strictly,
    person_reported,
    reported,
)
from agent_core.understanding.recognition.recognise import (
    ACTION_MARGIN,
    ACTION_THRESHOLD,
    THRESHOLD,
    Match,
)

HIGH_RISK_TOOLS: Final = frozenset(
    {"cancel_order", "request_return", "request_refund", "change_address"}
)
READ_TOOLS: Final = frozenset({"get_order_status", "track_parcel"})
# The buttons offered when nothing closer is known, in this order.
DEFAULT_CHOICES: Final = (
    "tool:get_order_status",
    "tool:cancel_order",
    "tool:request_refund",
    "handoff:handoff",
)
MAX_CHOICES: Final = 4
CHOICE_FLOOR: Final = 0.2  # a weaker match is not worth a button

_POLITE: Final = POLITE
_ASKS: Final = QUESTION


# A more precise FAQ topic than the rule reading's ("do you ship to Toronto?" is where the
# shop delivers, not shipping in general).
# An FAQ or can't-do topic must beat an action by this much to replace its "which order?".
UNTARGETED_MARGIN: Final = 0.2
# An FAQ topic must beat the order reads by this much to answer an order-like question.
MISSING_MARGIN: Final = 0.25
REFINE_THRESHOLD: Final = 0.35
REFINE_MARGIN: Final = 0.1
REFINES: Final = {
    "shipping": frozenset({"delivery_countries", "delivery_times", "payment_methods"}),
    "cancellation": frozenset({"cancellation_fee", "newsletter"}),
    "refund": frozenset({"refund_times", "returns"}),
}


def refined_topic(rule_topics: Sequence[str], ranked: Sequence[Match]) -> tuple[str, str] | None:
    """(rule topic, the FAQ topic that refines it) when recognition is sure of one."""
    # The rule reading already agrees on the family of the topic: a lower bar will do.
    top = ranked[0] if ranked and ranked[0].score >= REFINE_THRESHOLD else None
    if top is None or top.intent.kind is not Kind.FAQ:
        return None
    for topic in rule_topics:
        if top.intent.name in REFINES.get(topic, ()):
            # … and recognition must prefer it clearly over the rule's own topic.
            own = next((m.score for m in ranked if m.intent.name == topic), 0.0)
            if top.score >= own + REFINE_MARGIN:
                return topic, top.intent.name
    return None


OTHER: Final = "cant_do:other"
COMPLAINT: Final = "cant_do:complaint"
# Text this close to "what can you do?" / "I have a question" is offered the choices rather
# than told "I can't help with that".
MENU_FLOOR: Final = 0.25
# Nothing but greetings, thanks, agreement and goodbyes ("hi again", "ok thanks", "好的谢谢").
_SMALL_TALK: Final = lazyre.compile(
    r"^(?=.*\w)(?:\W|(?<![a-z])(?:thanks|thank|you|thx|ty|ok|okay|cool|great|got|it|so|much|very|a|lot"
    r"|perfect|nice|awesome|alright|sure|fine|good|bye|goodbye|cheers|lol|hi|hello|hey|again"
    r"|there|me|morning|afternoon|evening)(?![a-z])"
    r"|好的|谢谢|多谢|感谢|嗯|好|收到|明白|知道|了|啦|哈|呀|拜拜|再见|辛苦)+$"
)
# "Which order should I cancel?" from recognition alone needs a close match: a customer
# asked which order for something they never meant ("I want to order a pizza") is lost.
WHICH_ORDER_THRESHOLD: Final = 0.75
# Another action this close means recognition cannot tell which change was asked for.
RIVAL_MARGIN: Final = 0.2
# Round 5: 0.3 -> 0.4: the rule reading's own topic ("chuck a spare battery in with A1007" is
# adding an item) is renamed only by a clearer match ("account" at 0.33 by "spare").
RETOPIC_THRESHOLD: Final = 0.4
PLACE_ORDER_MARGIN: Final = 0.15
# A request to DO something ("change the card", "帮我开发票"), not a question about it.
_DO_REQUEST: Final = lazyre.compile(
    r"(?<![a-z])(?:change|switch|swap|apply|give|add|remove|delete|send|issue|make|charge"
    r"|split)(?![a-z])|帮我|给我|改成|换成|开一张|删"
)
# Asking whether the shop does it ("do you send invoices?", "能开发票吗"), not asking it done.
_WHETHER: Final = lazyre.compile(
    r"^\W*(?:do|does|will|would) (?:you|your shop|they)(?![a-z])|是否|能不能|可不可以|吗\W*$"
    # Round 8: "can i use two cards", "any way to change my email on my account", "is there a
    # way to split the payment": whether it can be done, the FAQ's (with no order named)
    r"|^\W*(?:can|could|may) (?:i|we)(?![a-z])|(?<![a-z])(?:any|is there (?:a|any)) way (?:to|i can)"
    r"(?![a-z])|(?<![a-z])is it possible to(?![a-z])"
)
# Round 5: the same asked in Chinese beside an order ("A1001 到哪了，能开发票吗", "A1002 能不能
# 开发票", "能开发票不"): whether the shop does it is the FAQ's, with the order's status read.
# Only Chinese here: an English "will you send me the invoice for A1002" stays a request (v1).
_WHETHER_ZH: Final = lazyre.compile(
    # "能帮我…吗" asks the bot to do it (as "能帮我取消吗"), not whether the shop does
    r"是否|(?:能不能|可不可以|(?:能|可以)(?=[^，,。.;；!?！？]{0,8}(?:吗|么|嘛|不)\W*$))"
    r"(?!帮我|给我|替我|帮忙)|有没有"
    # "A1006 的发票开了吗": whether it was done, the FAQ's answer beside the order's status
    r"|了(?:吗|么|没|没有)\W*$"
)
# Round 5: the same, asked after a read of an order ("where's A1005, also do you take
# paypal?"): the FAQ's answer, with the order's status.
_WHETHER_AFTER: Final = lazyre.compile(
    r"(?:[,.;!?]\s*(?:(?:also|and|btw|plus|oh|but)\s+)?|\s(?:also|plus|btw)\s+)"
    r"(?:(?:do|does|will|would) (?:you|your shop|they)"
    r" (?:take|accept|support|allow|offer|ship|deliver|send)(?![a-z])"
    # "status of A1003 plus how do I get an invoice" (asked with no question mark)
    r"|how (?:do|can|would|should) (?:i|we)(?![a-z])|where can (?:i|we)(?![a-z]))"
)
# A question put as a statement ("I'm not sure how I'd pay you", "不知道能不能用").
_WONDERS: Final = lazyre.compile(
    r"(?<![a-z])(?:not sure|wonder\w*|don'?t know|no idea|curious)(?![a-z])"
    r"|不知道|不确定|想知道|想问问?"
    # Round 4: "I only have PayPal, hope that's not a problem", "只有银联卡，行不行"
    r"|(?<![a-z])(?:hope (?:that|this|it)(?:'?s| is) (?:not a problem|ok|okay|fine|alright)"
    r"|(?:is|would) (?:that|this|it) (?:be )?(?:ok|okay|fine|a problem|an issue))(?![a-z])"
    r"|行不行|可不可以用|能不能用"
    # A question in a polite frame ("could you tell me how to get a VAT receipt?", "can you
    # explain whether …", "I'd like to know if …"): an answer is asked for, not a thing done.
    r"|(?<![a-z])(?:(?:tell|let) me(?: know)?|explain|like to know|want to know|need to know)"
    r" (?:how|whether|if|what|when|where|which|why)(?![a-z])"
    r"|请问|告诉我(?:怎么|如何|能不能|可不可以|是否)"
)
# A question about how or where ("how do I get an invoice for A1002?", "A1002 的发票怎么开").
# Round 5: a word naming a person or the way to reach one; a request for a person that
# recognition finds (not the rule reading's HANDOFF table) needs one.
_PERSON: Final = lazyre.compile(
    r"(?<![a-z])(?:persons?|people|humans?|(?:some|som|sum|any)(?:one|1|body|bdy|ne)|agents?|staff"
    r"|operators?|representatives?|reps?|managers?|supervisors?|boss|team|colleagues?"
    r"|employees?|workers?|works|customer service|support|call|phone|ring|bot"
    r"|chatbot|machine|robot)(?![a-z])|人|客服|工作人员|电话|主管|经理|售后|领导|老板"
)
# Round 5: how long something takes, asked about things in general ("how many days does it
# take for stuff to arrive?"), not about "my" order: the FAQ's, with no order to read.
_HOW_LONG_IN_GENERAL: Final = lazyre.compile(
    r"^(?!.*(?<![a-z])(?:my|mine|our)(?![a-z])).*(?<![a-z])how (?:long|many (?:days|weeks|working"
    r" days|business days)) (?:does|do|will|would|is) (?:it|things|stuff|an order|orders|a parcel"
    r"|parcels|delivery|shipping)(?: usually| normally| generally| typically)? take"
)
_NEEDS: Final = lazyre.compile(
    r"(?<![a-z])(?:i|we) (?:need|require)(?![a-z])|^\W*need(?![a-z])|我(?:需要|要一张)"
)
_HOW: Final = lazyre.compile(r"(?<![a-z])(?:how|where)(?![a-z])|怎么|如何|在哪")
_FILLER_WORDS: Final = frozenset({"hi", "hello", "hey", "the", "and", "lol", "ok", "okay"})


# With the chat's order in view, an FAQ or can't-do topic must beat an order read by this.
CONTEXT_MARGIN: Final = 0.1
# FAQ topics about how an order moves along (how long delivery or a refund takes, shipping,
# lateness): asked about an order named, with nothing that asks for the rule in general,
# the order's status answers it ("A1001 deliver today?", "why is A1001 taking so long").
PROGRESS_TOPICS: Final = frozenset(
    {"delivery_times", "refund_times", "shipping", "delay_compensation"}
)
_IN_GENERAL: Final = lazyre.compile(
    r"(?<![a-z])(?:usually|normally|generally|in general|typically|policy|policies|rules?|cost"
    r"|costs|fee|fees|price|compensat\w*|voucher)(?![a-z])|一般|通常|平时|政策|规定|规则|费用"
    r"|运费|多少钱|补偿|赔"
)


class Outcome(StrEnum):
    KEEP = "keep"  # the rule reading stands
    HANDOFF = "handoff"
    FAQ = "faq"
    CANT_DO = "cant_do"
    READ = "read"
    ACTION = "action"
    WHICH_ORDER = "which_order"  # an action (or read) with no order: ask which
    CHOICES = "choices"


@dataclass(frozen=True)
class Facts:
    """What the rule reading found, as far as the decision needs it."""

    text: str  # folded text without order ids
    orders: tuple[str, ...]
    vague: bool  # nothing explicit was read
    unsupported: bool  # the rule reading found something no tool serves
    untargeted: str | None  # an action with no order in view ("cancel my subscription")
    context: bool = False  # the chat has an earlier order
    negated: bool = False  # the rule reading dropped a negated action ("don't cancel")
    repaired: bool = False  # a typo was repaired to read the text ("cancdling")
    missing: bool = False  # an order read with no order in view ("where's my bill?")


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    intent: IntentDef | None = None
    choices: list[IntentDef] = field(default_factory=list)
    menu: bool = False  # "what can you do?" rather than "I did not understand"
    no_actions: bool = False  # the text negates: no action is offered, not even a default
    with_reads: bool = False  # FAQ: the orders named also get their status read


_TOPIC_FILLER: Final = frozenset({"for", "of", "on", "my", "the", "pls", "plz", "please", "order"})


def _bare_topic(text: str) -> bool:
    """A topic named with an order and nothing else ("invoice A1002", "A1006 warranty?"): a
    keyword asks what the FAQ says about that order, as "how do I get an invoice for A1002?"
    does; a request to do it has a verb ("send me the invoice for A1002")."""
    words = [w for w in re.findall(r"[a-z]+", text) if w not in _TOPIC_FILLER]
    han = re.sub(r"订单|的|呢", "", "".join(re.findall(r"[\u4e00-\u9fff]+", text)))
    if han:  # "A1002 发票", "A1006 的保修": a Chinese topic word or two, nothing else
        return not words and len(han) <= 4 and not _DO_REQUEST.search(text)
    return 0 < len(words) <= 2 and not _DO_REQUEST.search(text)


def guarded(text: str) -> bool:
    """Whether the text negates, asks, retracts or reports: no action from recognition."""
    if NEGATORS_EN.search(text) or NEGATORS_ZH.search(text) or negated_strictly(text):
        return True
    if re.search(r"(?<![a-z])no(?![a-z])|不|别|勿|禁止|算了", text):
        return True
    if RETRACTION.search(text) or reported(text):
        return True
    return bool(_ASKS.search(text)) and not _POLITE.search(text)


# An FAQ topic and the can't-do topic of doing it ("how do I delete my account?" /
# "delete my account"): when both are close, a question is the FAQ's, a request the other's.
PAIRED: Final = {"account_help": "account", "payment_methods": "payment_change"}
PAIR_MARGIN: Final = 0.2
# FAQ topics that answer a request as well as a question: no tool or can't-do topic does
# them ("stop spamming me with your emails", "please send me an invoice for A1002": v2 rule 2;
# v1's three invoice cases were relabelled to it in round 8).
REQUESTED_FAQ: Final = frozenset({"newsletter", "invoices"})
_FOR_ME: Final = lazyre.compile(
    r"(?<![a-z])for me(?![a-z])|^\W*(?:please |pls )?(?:reset|delete|close|remove|change|switch"
    r"|recover|unlock|cancel|merge|update)(?![a-z])|帮我|给我|替我|请把|把我"
)


def _paired(ranked: Sequence[Match], text: str) -> list[Match]:
    """The ranking with an FAQ topic and its can't-do twin in the order the text asks."""
    if len(ranked) < 2 or ranked[0].score < THRESHOLD:
        return list(ranked)
    top = ranked[0]
    names = {v: k for k, v in PAIRED.items()} | PAIRED
    twin_name = names.get(top.intent.name)
    twin = next((m for m in ranked[1:] if m.intent.name == twin_name), None)
    if twin is None or top.score - twin.score > PAIR_MARGIN:
        return list(ranked)
    request = _FOR_ME.search(text) is not None
    # Round 8: "any way to change my email on my account" asks whether, with no question mark
    asks = (is_question(text) or _WHETHER.search(text) is not None) and not request
    wanted = Kind.FAQ if asks else Kind.CANT_DO if request else top.intent.kind
    if top.intent.kind is wanted:
        return list(ranked)
    return [twin, *(m for m in ranked if m is not twin)]


# Round 5: buying something, with no order of the customer's named and no word that changes
# one ("I'd like to order a second kettle", "buy me the blue lamp"), is a new order, though
# "a second …" or "blue" is closer to an example of changing an order's items.
_BUYS: Final = lazyre.compile(
    r"(?<![a-z])(?:buy|order|purchase|reorder|get me|i'?ll take|wanna get)(?![a-z])"
    r"(?! (?:status|number|id|history|details?)\b)"
)
_CHANGES_ITEMS: Final = lazyre.compile(
    r"(?<![a-z])(?:add|remove|swap|switch|change|replace|take (?:\S+ ){0,3}?(?:out|off)|drop|instead"
    r"|in my order|to my order|from my order|on my order)(?![a-z])"
)
NEW_ORDER_MARGIN: Final = 0.3


def _new_order(ranked: Sequence[Match], facts: Facts) -> list[Match]:
    """The ranking with a new order first when the text buys and changes nothing."""
    if len(ranked) < 2 or facts.orders or ranked[0].intent.name != "change_items":
        return list(ranked)
    if not _BUYS.search(facts.text) or _CHANGES_ITEMS.search(facts.text):
        return list(ranked)
    new = next((m for m in ranked if m.intent.name == "place_order"), None)
    if new is None or not new.anchored or ranked[0].score - new.score > NEW_ORDER_MARGIN:
        return list(ranked)
    return [new, *(m for m in ranked if m is not new)]


def decide(ranked: Sequence[Match], facts: Facts) -> Decision:
    ranked = _new_order(_paired(ranked, facts.text), facts)
    top = ranked[0] if ranked and ranked[0].score >= THRESHOLD else None
    asks = is_question(facts.text)
    if facts.missing:
        # "where's my bill?" reads like an order question, but the FAQ answers it.
        read = max((m.score for m in ranked if m.intent.name in READ_TOOLS), default=0.0)
        # … as "I want to make a complaint about your courier" is a complaint.
        if (
            top
            and top.intent.kind in (Kind.FAQ, Kind.CANT_DO)
            and top.score >= ACTION_THRESHOLD
            and (top.score - read >= MISSING_MARGIN or _HOW_LONG_IN_GENERAL.search(facts.text))
        ):
            return Decision(Outcome(top.intent.kind.value), top.intent)
        # A statement that asks nothing ("the parcel arrived crushed, awful service", "your
        # courier threw my parcel over the fence, unacceptable") names the parcel only to
        # say what went wrong: a complaint (the best match, so closer than any read) is what
        # it is. A question ("where is my parcel? unacceptable") still asks the read.
        if (
            top
            and top.intent.key == COMPLAINT
            and not _ASKS.search(facts.text)
            and not _HOW.search(facts.text)
            and top.score > read
        ):
            return Decision(Outcome.CANT_DO, top.intent)
        return Decision(Outcome.KEEP)
    if not (facts.vague or facts.unsupported or facts.untargeted):
        return Decision(Outcome.KEEP)
    if facts.untargeted:
        # "cancel my newsletter subscription": an FAQ or can't-do topic that beats the
        # action is what was meant; a question about an action with no order ("does it cost
        # anything to cancel an order?") is the FAQ's; otherwise "which order?" stands.
        # Only on words of its own ("scrap my order" is not "place an order" by "order").
        if top and top.intent.kind in (Kind.FAQ, Kind.CANT_DO) and top.anchored:
            action = next((m for m in ranked if m.intent.name == facts.untargeted), None)
            if (
                action is None
                or top.score >= action.score + UNTARGETED_MARGIN
                or (asks and top.intent.kind is Kind.FAQ)
            ):
                return Decision(Outcome(top.intent.kind.value), top.intent)
        return Decision(Outcome.KEEP)
    if facts.unsupported:
        # "do you accept PayPal?", "付款方式", "how do I get an invoice for A1002?": a question
        # (or a bare topic) the FAQ answers; a request to DO it stays can't-do.
        if (
            top
            and top.intent.kind is Kind.FAQ
            and (not _DO_REQUEST.search(facts.text) or _WHETHER.search(facts.text))
            and (
                not facts.orders
                or _HOW.search(facts.text)
                or _WHETHER_ZH.search(facts.text)
                or _bare_topic(facts.text)
                or _WHETHER_AFTER.search(facts.text)
            )
            and (
                asks
                or _WONDERS.search(facts.text)
                or len(facts.text.split()) <= 3
                or _WHETHER_AFTER.search(facts.text)
            )
        ):
            return Decision(Outcome.FAQ, top.intent, with_reads=bool(facts.orders))
        if (
            top
            and top.intent.kind is Kind.FAQ
            and top.intent.name not in PAIRED
            and top.intent.name not in PAIRED.values()
            and top.score >= ACTION_THRESHOLD
            and not facts.orders
            and _NEEDS.search(facts.text)
            and not _DO_REQUEST.search(facts.text)
        ):
            # Round 5: a need the FAQ answers, stated ("I need a VAT receipt for my
            # company"), as the question "how do I get one?" is; a request to do it ("send
            # me an invoice") stays what no tool does.
            return Decision(Outcome.FAQ, top.intent)
        cant_do = next((m for m in ranked if m.intent.kind is Kind.CANT_DO), None)
        faq = next((m for m in ranked if m.intent.name in REQUESTED_FAQ), None)
        if (
            faq is not None
            and faq.score >= THRESHOLD
            and faq.anchored
            and (cant_do is None or faq.score >= cant_do.score)
        ):
            # A topic nothing here can do but the FAQ answers ("your promotional mails
            # are filling up my inbox"): its answer, asked or not (v2 rule 2).
            return Decision(Outcome.FAQ, faq.intent, with_reads=bool(facts.orders))
        if cant_do is not None and facts.orders and cant_do.intent.name == "place_order":
            # Round 5: with one of the customer's orders named, a change is to that order
            # ("change the size of the shirt in A1003 to L" is close to "order me a shirt in
            # size L" too): the change of items, when it is nearly as close.
            change = next((m for m in ranked if m.intent.name == "change_items"), None)
            if change is not None and cant_do.score - change.score <= PLACE_ORDER_MARGIN:
                cant_do = change
        if cant_do is not None and cant_do.score >= RETOPIC_THRESHOLD:
            # The rule reading names it and keeps its reads; recognition names its topic
            # ("your phone number" is not an account change).
            return Decision(Outcome.KEEP, cant_do.intent)
        return Decision(Outcome.KEEP)
    if _SMALL_TALK.match(facts.text) and not facts.orders:
        return _choices(ranked, facts, menu=True)  # "thanks", "ok": what else it can do
    if facts.negated:
        # "don't cancel A1001" and nothing else: no FAQ or person guessed from the rest.
        return _choices(ranked, facts, menu=False)
    if top is None:
        if facts.orders:
            return Decision(Outcome.KEEP)
        menu_score = max((m.score for m in ranked if m.intent.kind is Kind.MENU), default=0.0)
        if substantial(facts.text) and menu_score < MENU_FLOOR:
            # A real request in words nothing here knows ("what time does the store
            # open?"): named as something no tool serves, with the offer of a person.
            other = next((m.intent for m in ranked if m.intent.key == OTHER), None)
            if other is not None:
                return Decision(Outcome.CANT_DO, other)
        return _choices(ranked, facts, menu=False)
    intent = top.intent
    if intent.kind is Kind.MENU:
        return Decision(Outcome.KEEP) if facts.orders else _choices(ranked, facts, menu=True)
    if intent.kind is Kind.HANDOFF:
        if person_reported(facts.text):
            # "a human told me A1001 was lost": a person talked about, none asked for.
            return Decision(Outcome.KEEP) if facts.orders else _choices(ranked, facts, menu=False)
        if (guarded(facts.text) and not asks) or not _PERSON.search(facts.text):
            # "I picked medium but I really need the large" is close to "let me talk to a real
            # human" by "really" and "need" alone: a person is asked for only by a word that
            # names one (or the way to reach one). Round 8: with an order named ("is A1003
            # being prepared"), its status read stands, never a menu of actions on it.
            return Decision(Outcome.KEEP) if facts.orders else _choices(ranked, facts, menu=False)
        return Decision(Outcome.HANDOFF, intent)
    if intent.kind in (Kind.FAQ, Kind.CANT_DO):
        if facts.orders and intent.kind is Kind.CANT_DO and _bare(facts.text):
            return Decision(Outcome.KEEP)  # "order A1003?": an id and a word is its status
        tool = max((m.score for m in ranked if m.intent.kind is Kind.TOOL), default=0.0)
        if facts.orders and (
            top.score < ACTION_THRESHOLD or not top.anchored or top.score - tool < CONTEXT_MARGIN
        ):
            # "order A1003?", "what's the latest on A1006?": the status read stands unless
            # recognition is sure the question is something else (and not as close to
            # something done to the order: "has anyone changed the address on A1005?").
            return Decision(Outcome.KEEP)
        if facts.orders and intent.kind is Kind.FAQ and not asks_policy(facts.text):
            # "is A1001 delayed?", "why is A1001 taking so long", "A1001 几天能送到": a
            # question about the order's own state; a policy needs a policy question.
            return Decision(Outcome.KEEP)
        if facts.orders and intent.name in PROGRESS_TOPICS and not _IN_GENERAL.search(facts.text):
            return Decision(Outcome.KEEP)  # how this order is getting on: its status
        order_read = next((m for m in ranked if m.intent.name in READ_TOOLS), None)
        if (
            not facts.orders
            and facts.context
            and order_read is not None
            and top.score - order_read.score < CONTEXT_MARGIN
        ):
            # "so is it coming or what" in a chat about an order: as close to asking
            # about that order as to the FAQ ("does it come with a guarantee"): the read.
            return Decision(Outcome.READ, order_read.intent)
        if not facts.orders and not top.anchored:
            # "about my order": only words an order read or the menu have ("order")
            return _choices(ranked, facts, menu=False)
        return Decision(Outcome(intent.kind.value), intent, with_reads=intent.kind is Kind.FAQ)
    if intent.name in READ_TOOLS:
        if intent.name == "track_parcel" and not top.beyond_status:
            # "A1001 快递": nothing the status examples lack, so nothing parcel-level asked
            status = next((m for m in ranked if m.intent.name == "get_order_status"), None)
            intent = status.intent if status is not None else intent
        if facts.orders or facts.context:
            return Decision(Outcome.READ, intent)
        return Decision(Outcome.WHICH_ORDER, intent)
    if intent.name in HIGH_RISK_TOOLS or intent.kind is Kind.TOOL:
        second = next((m.score for m in ranked[1:] if m.intent.name != intent.name), 0.0)
        newsletter = next((m for m in ranked if m.intent.name in REQUESTED_FAQ), None)
        if (
            not facts.orders
            and not top.named
            and newsletter is not None
            and newsletter.score >= THRESHOLD
            and newsletter.anchored
        ):
            # "I don't want your newsletter anymore": the wording of a cancel ("I don't want
            # it anymore"), no word naming one, and what is not wanted is the newsletter:
            # its FAQ (v2 rule 2), never "which order?".
            return Decision(Outcome.FAQ, newsletter.intent)
        if guarded(facts.text):
            # "has A1003 been cancelled?": the status read of the order named stands.
            return Decision(Outcome.KEEP) if facts.orders else _choices(ranked, facts, menu=False)
        if not facts.orders:
            if top.score < WHICH_ORDER_THRESHOLD:
                return _choices(ranked, facts, menu=False)  # "call the police"
            return Decision(Outcome.WHICH_ORDER, intent)
        # From here an order is named.
        if not (top.anchored and top.named) or _as_close_to_cant_do(ranked, intent):
            # Only words an order read shares ("订单 A1005"), or as close to something no
            # tool does ("who changed the address on A1003" is as near "change my email
            # address" as "change my delivery address"): no action can be told apart, and
            # the named order's status read stands. (An FAQ this close is usually the
            # action's own policy: "A1002 把钱还我" still offers the refund.)
            return Decision(Outcome.KEEP)
        rival = max(
            (m.score for m in ranked[1:] if m.intent.name in HIGH_RISK_TOOLS - {intent.name}),
            default=0.0,
        )
        if (
            len(facts.orders) == 1
            and not facts.repaired
            and top.score >= ACTION_THRESHOLD
            and top.score - second >= ACTION_MARGIN
            and top.score - rival >= RIVAL_MARGIN
        ):
            return Decision(Outcome.ACTION, intent)
        return _choices(ranked, facts, menu=False)
    return _choices(ranked, facts, menu=False)


def _as_close_to_cant_do(ranked: Sequence[Match], intent: IntentDef) -> bool:
    """The best other intent is something no tool does, within the action margin."""
    runner_up = next((m for m in ranked[1:] if m.intent.name != intent.name), None)
    return (
        runner_up is not None
        and runner_up.intent.kind is Kind.CANT_DO
        and ranked[0].score - runner_up.score < ACTION_MARGIN
    )


# An action from recognition alone needs the request to share at least this many features
# with the example it matched: one rare word ("I expect a refund" for "expected delivery for
# A1005") is a likeness of wording, not the same request.
ACTION_SHARED: Final = 2


def _bare(text: str) -> bool:
    """At most two words and nothing else ("order A1003?" without its id)."""
    return len(re.findall(r"\w+", text)) <= 2 and not re.search(r"[\u4e00-\u9fff]", text)


def substantial(text: str) -> bool:
    """Enough words to be a request (not "asdfgh", "?", "👍"): four English words of two
    letters or more, or six Chinese characters."""
    words = [w for w in re.findall(r"[a-z]{2,}", text) if w not in _FILLER_WORDS]
    han = re.findall(r"[\u4e00-\u9fff]", text)
    return len(words) >= 4 or len(han) >= 6


def _choices(ranked: Sequence[Match], facts: Facts, *, menu: bool) -> Decision:
    """Up to four buttons: the closest things the bot can do, then the defaults."""
    picked: list[IntentDef] = []
    negated = guarded(facts.text) and not _ASKS.search(facts.text)
    for match in ranked:
        intent = match.intent
        if menu or match.score < CHOICE_FLOOR or intent.label is None:
            break
        if intent.kind in (Kind.MENU, Kind.CANT_DO) or intent in picked:
            continue
        if (negated or facts.negated) and intent.name in HIGH_RISK_TOOLS:
            continue  # "don't cancel A1003" is never answered with a Cancel button
        picked.append(intent)
        if len(picked) == MAX_CHOICES:
            break
    # The defaults (DEFAULT_CHOICES) fill the rest where the choices are built.
    return Decision(Outcome.CHOICES, choices=picked, menu=menu, no_actions=negated or facts.negated)
