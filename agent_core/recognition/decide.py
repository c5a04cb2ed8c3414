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

from agent_core.lexicon_intents import NEGATORS_EN, NEGATORS_ZH
from agent_core.recognition.intents import IntentDef, Kind
from agent_core.recognition.normalise import POLITE, QUESTION
from agent_core.recognition.precision import RETRACTION, negated_strictly, reported
from agent_core.recognition.recognise import ACTION_MARGIN, ACTION_THRESHOLD, THRESHOLD, Match

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


_THANKS: Final = re.compile(
    r"^\W*(?:thanks|thank you|thx|ty|ok|okay|cool|great|got it|好的|谢谢|多谢|嗯|好)\W*$"
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


def guarded(text: str) -> bool:
    """Whether the text negates, asks, retracts or reports: no action from recognition."""
    if NEGATORS_EN.search(text) or NEGATORS_ZH.search(text) or negated_strictly(text):
        return True
    if re.search(r"(?<![a-z])no(?![a-z])|不|别|勿|禁止|算了", text):
        return True
    if RETRACTION.search(text) or reported(text):
        return True
    return bool(_ASKS.search(text)) and not _POLITE.search(text)


def decide(ranked: Sequence[Match], facts: Facts) -> Decision:
    top = ranked[0] if ranked and ranked[0].score >= THRESHOLD else None
    if facts.missing:
        # "where's my bill?" reads like an order question, but the FAQ answers it.
        read = max((m.score for m in ranked if m.intent.name in READ_TOOLS), default=0.0)
        if (
            top
            and top.intent.kind is Kind.FAQ
            and top.score >= ACTION_THRESHOLD
            and top.score - read >= MISSING_MARGIN
        ):
            return Decision(Outcome.FAQ, top.intent)
        return Decision(Outcome.KEEP)
    if not (facts.vague or facts.unsupported or facts.untargeted):
        return Decision(Outcome.KEEP)
    if facts.untargeted:
        # "cancel my newsletter subscription": an FAQ or can't-do topic that beats the
        # action is what was meant; otherwise "which order?" stands.
        if top and top.intent.kind in (Kind.FAQ, Kind.CANT_DO):
            action = next((m for m in ranked if m.intent.name == facts.untargeted), None)
            if action is None or top.score >= action.score + UNTARGETED_MARGIN:
                return Decision(Outcome(top.intent.kind.value), top.intent)
        return Decision(Outcome.KEEP)
    if facts.unsupported:
        # "do you accept PayPal?": a question the FAQ answers, about no order.
        if top and top.intent.kind is Kind.FAQ and not facts.orders and _ASKS.search(facts.text):
            return Decision(Outcome.FAQ, top.intent)
        return Decision(Outcome.KEEP)  # the rule reading names it, and keeps its reads
    if _THANKS.match(facts.text):
        return Decision(Outcome.KEEP)  # "thanks", "ok": nothing to offer
    if facts.negated:
        # "don't cancel A1001" and nothing else: no FAQ or person guessed from the rest.
        return _choices(ranked, facts, menu=False)
    if top is None:
        return Decision(Outcome.KEEP) if facts.orders else _choices(ranked, facts, menu=False)
    intent = top.intent
    if intent.kind is Kind.MENU:
        return Decision(Outcome.KEEP) if facts.orders else _choices(ranked, facts, menu=True)
    if intent.kind is Kind.HANDOFF:
        if guarded(facts.text) and not _ASKS.search(facts.text):
            return _choices(ranked, facts, menu=False)
        return Decision(Outcome.HANDOFF, intent)
    if intent.kind in (Kind.FAQ, Kind.CANT_DO):
        return Decision(Outcome(intent.kind.value), intent)
    if intent.name in READ_TOOLS:
        if facts.orders or facts.context:
            return Decision(Outcome.READ, intent)
        return Decision(Outcome.WHICH_ORDER, intent)
    if intent.name in HIGH_RISK_TOOLS or intent.kind is Kind.TOOL:
        second = next((m.score for m in ranked[1:] if m.intent.name != intent.name), 0.0)
        if guarded(facts.text):
            # "has A1003 been cancelled?": the status read of the order named stands.
            return Decision(Outcome.KEEP) if facts.orders else _choices(ranked, facts, menu=False)
        if not facts.orders:
            if top.score < ACTION_THRESHOLD:
                return _choices(ranked, facts, menu=False)  # "call the police"
            return Decision(Outcome.WHICH_ORDER, intent)
        if (
            len(facts.orders) == 1
            and not facts.repaired
            and top.score >= ACTION_THRESHOLD
            and top.score - second >= ACTION_MARGIN
        ):
            return Decision(Outcome.ACTION, intent)
        return _choices(ranked, facts, menu=False)
    return _choices(ranked, facts, menu=False)


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
