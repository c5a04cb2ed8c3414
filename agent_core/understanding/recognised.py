"""Recognition applied to the rule understanding (issue 21).

The rule reading (`agent_core.understanding.understand`) comes first: it knows clauses, orders,
negation and scope. Where it found nothing explicit, only something no tool serves, or an
action with no order in view, the request is compared with the declared examples
(`agent_core.understanding.recognition`) and the decision (`recognition.decide`) is applied here: an FAQ
answer, a can't-do answer naming the topic, a person, a read, an action (rarely, under
strict conditions), "which order?", or a few buttons of the closest things the bot can do.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from agent_core import lazyre
from agent_core.interpretation import (
    Clarification,
    ClarifyOption,
    Handoff,
    Intent,
    Interpretation,
    PolicyLookup,
)
from agent_core.models import Language
from agent_core.understanding.clarifying import amount_in, option_text, which_order
from agent_core.understanding.lexicon import POLICY_QUERIES, PolicyTopic
from agent_core.understanding.lexicon_intents import UNSUPPORTED, Action
from agent_core.understanding.reading import Reading
from agent_core.understanding.recognition.decide import (
    ACTION_SHARED,
    DEFAULT_CHOICES,
    HIGH_RISK_TOOLS,
    MAX_CHOICES,
    OTHER,
    PAIRED,
    REFINES,
    Decision,
    Facts,
    Outcome,
    decide,
    refined_topic,
)
from agent_core.understanding.recognition.intents import IntentDef, Kind
from agent_core.understanding.recognition.normalise import fold_text, is_question
from agent_core.understanding.recognition.precision import asks_policy
from agent_core.understanding.recognition.recognise import THRESHOLD, Match, Recogniser
from agent_core.understanding.understand import STATUS_TOOL, Understood

# The FAQ topic a built-in policy topic is (the lexicon's names are kept for the v1 eval).
LEGACY_TOPICS: Mapping[str, PolicyTopic] = {
    "returns": PolicyTopic.REFUND,
    "refund": PolicyTopic.REFUND,
    "shipping": PolicyTopic.SHIPPING,
    "cancellation": PolicyTopic.CANCELLATION,
    "delay_compensation": PolicyTopic.DELAY_COMPENSATION,
    "exchange": PolicyTopic.EXCHANGE,
    "warranty": PolicyTopic.WARRANTY,
}
# Parts of a clause that may each ask their own question ("do you ship to X and how long").
_PART_BREAK = lazyre.compile(r"(?<![a-z])(?:and|or)(?![a-z])|并且|而且|以及")
_ID_CHAR = lazyre.compile(r"[\ue000-\uefff]")
# "also how do I …", "另外你们寄不寄日本": the word linking it to the last question.
_LEADING_LINK = lazyre.compile(
    r"^\W*(?:(?:also|and|btw|by the way|plus|then|oh)\b\W*|另外|还有|顺便(?:问一?下)?|然后|以及)\s*"
)
# "寄不寄", "能不能", "有没有": a Chinese question without a question word.
_A_NOT_A = lazyre.compile(r"([\u4e00-\u9fff])[不没]\1")
CLAUSE_THRESHOLD = 0.5
CLAUSE_MARGIN = 0.15
# The can't-do topic of each built-in unsupported item.
UNSUPPORTED_TOPICS: Mapping[str, str] = {
    "payment": "payment_change",
    "invoice": "other",
    "discount": "discount",
    "add_items": "change_items",
    "phone": "account",
    "weather": "other",
    "recommend": "other",
    "review": "review",
    "complaint": "complaint",
}
_CHOICES_QUESTION = {
    Language.ZH: "我不太确定你的意思。你想做下面哪一件事？",
    Language.EN: "I'm not sure I understood. Which of these would you like?",
}
_MENU_QUESTION = {
    Language.ZH: "我可以查询、取消订单，申请退货、退款，修改地址，解答政策问题，或为你转人工。你想做什么？",
    Language.EN: "I can track or cancel an order, start a return or refund, change a delivery "
    "address, answer questions about our policies, or get you a person. What would you like?",
}


def faq_queries(intents: Sequence[IntentDef]) -> dict[str, Mapping[Language, str]]:
    """The search_policy query of every FAQ topic, by topic name."""
    queries: dict[str, Mapping[Language, str]] = {t.value: q for t, q in POLICY_QUERIES.items()}
    for intent in intents:
        if intent.kind is Kind.FAQ and intent.query is not None:
            legacy = LEGACY_TOPICS.get(intent.name)
            if legacy is not None:
                queries[intent.name] = POLICY_QUERIES[legacy]
            else:
                queries[intent.name] = {
                    Language.EN: intent.query.en,
                    Language.ZH: intent.query.zh,
                }
    return queries


def recognise(
    understood: Understood,
    reading: Reading,
    language: Language,
    recogniser: Recogniser,
    context_order_id: str | None,
    customer_tools: frozenset[str] = frozenset(),
) -> Understood:
    """The understanding, changed by what recognition over the examples decided.

    `customer_tools`: the read tools keyed by the asking customer (no order): one of them
    recognised, with no order named, is planned as it is, never "which order?"."""
    interp = understood.interpretation
    if interp.handoff is not None or reading.suspects or reading.injections:
        return understood
    if understood.refusal == "needs_clarification" and not understood.untargeted:
        return understood
    text = _without_ids(reading)
    facts = Facts(
        text=fold_text(text),
        orders=tuple(i for i in understood.mention_order if i not in interp.kept),
        vague=understood.vague,
        unsupported=bool(interp.unsupported) and not interp.unrecognised,
        untargeted=understood.untargeted,
        context=context_order_id is not None,
        negated=bool(interp.negated),
        repaired=recogniser.normaliser.repairs(text),
        missing=understood.refusal == "missing_order_id",
    )
    # By meaning only where recognition may decide (what the rule reading left open), or
    # where the words found nothing.
    open_ = facts.vague or facts.unsupported or bool(facts.untargeted) or facts.missing
    ranked = recogniser.rank(text, meaning=True if open_ else None)
    keyed = customer_read(ranked, facts, customer_tools)
    if keyed is not None:
        return _customer_step(keyed, understood, reading)
    refined = refined_topic([p.topic for p in interp.policies], ranked)
    if refined is not None:
        old, new = refined
        for lookup in interp.policies:
            if lookup.topic == old:
                lookup.topic = new
    decision = decide(ranked, facts)
    if decision.outcome is Outcome.ACTION and ranked:
        shared = set(recogniser.normaliser.features(text)) & set(
            recogniser.normaliser.features(ranked[0].example)
        )
        if len(shared) < ACTION_SHARED:
            # Not the same request: the rule reading (the named order's status) stands.
            decision = Decision(Outcome.KEEP)
    if ranked and (decision.outcome is not Outcome.KEEP or refined is not None):
        # Said only where recognition changed something (staff see why).
        interp.recognised = f"{ranked[0].intent.key} {ranked[0].score:.2f}"
    applied = _apply(decision, understood, reading, language, recogniser, context_order_id)
    asked = _clause_questions(applied, reading, recogniser, decision.outcome is Outcome.FAQ)
    return _clause_cant_do(asked, reading, recogniser, language)


# A part of a message is something no tool serves when it is this close to a can't-do
# topic, and this much closer to it than to anything the bot can do.
CANT_DO_THRESHOLD = 0.75
CANT_DO_MARGIN = 0.15


def _clause_cant_do(
    understood: Understood, reading: Reading, recogniser: Recogniser, language: Language
) -> Understood:
    """A read with a request no tool serves beside it ("where is A1001? also tell me a
    joke", "A1003 到哪了？你们门店几点开门"): the part without an order, recognised on its
    own, is named as unsupported (the offer of a person) and the read stays."""
    interp = understood.interpretation
    if _settled(understood, reading) or not interp.intents or len(reading.clauses) < 2:
        return understood
    for clause in reading.clauses:
        if clause.ids:
            continue
        text = _ID_CHAR.sub(" ", clause.raw)
        ranked = recogniser.rank(text)
        # Only what is off the shop's ground altogether ("other"): a part about the order
        # ("both of them, now", "质量太差") is read by the rules, not named unsupported.
        if not ranked or ranked[0].intent.key != OTHER or not ranked[0].anchored:
            continue
        top = ranked[0]
        rival = max((m.score for m in ranked[1:] if m.intent.kind is not Kind.CANT_DO), default=0.0)
        if top.score >= CANT_DO_THRESHOLD and top.score - rival >= CANT_DO_MARGIN:
            names = top.intent.cant_name
            label = (
                (names.zh if language is Language.ZH else names.en) if names else top.intent.name
            )
            interp.unsupported.append(label)
            interp.unsupported_topics.append(top.intent.name)
    return understood


def _settled(understood: Understood, reading: Reading) -> bool:
    """Nothing for the parts of a message to add: refused, handed to a person, carrying
    injected text, or already naming what no tool serves."""
    interp = understood.interpretation
    return (
        understood.refusal is not None
        or interp.handoff is not None
        or bool(reading.injections)
        or bool(interp.unsupported)
    )


def _clause_questions(
    understood: Understood, reading: Reading, recogniser: Recogniser, recognised: bool
) -> Understood:
    """Each question of a message answered: "do you ship to Ireland, and how long would it
    take?" asks two FAQ topics, "A1005 到哪了？另外你们寄不寄日本" a read and a topic. Every
    part of the message without an order is recognised on its own; a part whose closest
    intent is an FAQ topic (clearly, over any tool) adds that topic (or makes the rule
    reading's broader topic of the same family precise). Where the whole message's topic
    came from recognition (`recognised`), the parts' topics replace it: each part is
    closer to what it asks than the message as a whole."""
    interp = understood.interpretation
    if _settled(understood, reading):
        return understood
    # As written (a "寄到" in a question is not blanked as a new address here).
    parts = [p for c in reading.clauses if not c.ids for p in _PART_BREAK.split(fold_text(c.raw))]
    if len(reading.clauses) + len(parts) < 3:
        return understood  # one question: the message's own recognition said it
    found: list[str] = []
    for part in parts:
        text = _ID_CHAR.sub(" ", part)
        folded = _LEADING_LINK.sub("", fold_text(text))
        asks = is_question(folded) or _A_NOT_A.search(folded) is not None
        if not asks:
            continue  # "please process it", "danke": part of another
        if reading.order_ids and not asks_policy(folded):
            continue  # "where's A1001? why is it taking so long?": about the order itself
        ranked = recogniser.rank(text)
        if not ranked or ranked[0].intent.kind is not Kind.FAQ:
            continue
        top = ranked[0]
        if not (_a_question_of_its_own(folded) or _asked_as_written(folded, top)):
            continue  # "has it shipped?": part of another
        # A question about doing it is the FAQ's, not its can't-do twin's ("how do I reset
        # my password" is not "reset my password for me").
        twin = PAIRED.get(top.intent.name)
        rival = max(
            (
                m.score
                for m in ranked[1:]
                if m.intent.kind is not Kind.FAQ and m.intent.name != twin
            ),
            default=0.0,
        )
        if top.score >= CLAUSE_THRESHOLD and top.score - rival >= CLAUSE_MARGIN:
            found.append(top.intent.name)
    if not found:
        return understood
    if recognised and not _named_clause_asks(reading, interp.policies, found):
        clause = interp.policies[0].clause if interp.policies else reading.cleaned[:200]
        interp.policies = [PolicyLookup(topic=t, clause=clause) for t in dict.fromkeys(found)]
        return understood
    have = [p.topic for p in interp.policies]
    for topic in dict.fromkeys(found):
        if topic in have:
            continue
        broader = next((t for t in have if topic in REFINES.get(t, ())), None)
        if broader is not None and broader not in found:
            for lookup in interp.policies:
                if lookup.topic == broader:
                    lookup.topic = topic
            have = [p.topic for p in interp.policies]
            continue
        if any(t in REFINES.get(topic, ()) for t in have):
            continue  # the rule reading's topic is already the precise one
        interp.policies.append(PolicyLookup(topic=topic, clause=reading.cleaned[:200]))
        have.append(topic)
    return understood


def _named_clause_asks(reading: Reading, policies: list[PolicyLookup], found: list[str]) -> bool:
    """Round 5: the message's topic was asked in a clause naming an order ("is A1002 still
    under warranty and how do I get an invoice for it?"): the parts without an order add
    their topics to it rather than replace it."""
    if len(policies) != 1 or policies[0].topic in found:
        return False
    return any(c.ids and asks_policy(fold_text(c.raw)) for c in reading.clauses)


# A three-word part this close to an FAQ example asks it by itself ("is cancelling free").
WRITTEN_THRESHOLD = 0.9


def _asked_as_written(folded: str, top: Match) -> bool:
    """Three words and all but word for word one of the FAQ's examples."""
    return len(re.findall(r"[a-z]{2,}", folded)) >= 3 and top.score >= WRITTEN_THRESHOLD


def _a_question_of_its_own(folded: str) -> bool:
    """Four words, five Chinese characters, or three and a word ("支持 PayPal 吗"): enough
    to ask something by itself."""
    words = len(re.findall(r"[a-z]{2,}", folded))
    han = len(re.findall(r"[\u4e00-\u9fff]", folded))
    return words >= 4 or han >= 5 or (han >= 3 and words >= 1)


def customer_read(
    ranked: Sequence[Match], facts: Facts, customer_tools: frozenset[str]
) -> Match | None:
    """The customer-keyed read recognised (the best match, above the threshold), when the
    rule reading found nothing explicit and no order is named."""
    if not ranked or facts.orders or not customer_tools:
        return None
    top = ranked[0]
    if top.intent.kind is not Kind.TOOL or top.intent.name not in customer_tools:
        return None
    if top.score < THRESHOLD:
        return None
    if not (facts.vague or facts.missing or facts.untargeted or facts.unsupported):
        return None
    return top


def _customer_step(match: Match, understood: Understood, reading: Reading) -> Understood:
    interp = understood.interpretation
    fresh = Interpretation(
        language=interp.language,
        negated=interp.negated,
        kept=interp.kept,
        recognised=f"{match.intent.key} {match.score:.2f}",
        notes=interp.notes,
        ignored_instructions=interp.ignored_instructions,
    )
    fresh.intents = [Intent(tool=match.intent.name, clause=reading.cleaned[:200])]
    return Understood(fresh, understood.mention_order)


def _without_ids(reading: Reading) -> str:
    """The cleaned text with the order ids taken out (never folded or compared)."""
    text = reading.cleaned
    for order_id in reading.order_ids:
        text = text.replace(order_id, " ").replace(order_id.lower(), " ")
    return text


def _apply(
    decision: Decision,
    understood: Understood,
    reading: Reading,
    language: Language,
    recogniser: Recogniser,
    context_order_id: str | None,
) -> Understood:
    interp = understood.interpretation
    intent = decision.intent
    outcome = decision.outcome
    if outcome is Outcome.KEEP:
        if intent is not None and intent.kind is Kind.CANT_DO and interp.unsupported:
            interp.unsupported_topics = [intent.name]  # the topic recognition names
        return understood
    fresh = Interpretation(
        language=interp.language,
        negated=interp.negated,
        kept=interp.kept,
        recognised=interp.recognised,
        notes=interp.notes,
        ignored_instructions=interp.ignored_instructions,
    )
    order = understood.mention_order
    if outcome is Outcome.HANDOFF:
        fresh.handoff = Handoff(reason=" ".join(reading.cleaned.split())[:200])
        return Understood(fresh, order, refusal="handoff")
    if outcome is Outcome.FAQ and intent is not None:
        fresh.policies = [PolicyLookup(topic=intent.name, clause=reading.cleaned[:200])]
        if decision.with_reads:
            fresh.intents = [Intent(tool=STATUS_TOOL, order_ids=facts_orders(understood))]
        return Understood(fresh, order)
    if outcome is Outcome.CANT_DO and intent is not None:
        names = intent.cant_name
        label = (names.zh if language is Language.ZH else names.en) if names else intent.name
        fresh.unsupported = [label]
        fresh.unsupported_topics = [intent.name]
        return Understood(fresh, order, refusal="unsupported")
    if outcome is Outcome.READ and intent is not None:
        targets = list(facts_orders(understood))
        if targets:
            fresh.intents = [Intent(tool=intent.name, order_ids=targets)]
        else:
            assert context_order_id is not None
            fresh.context_order_id = context_order_id
            fresh.intents = [
                Intent(tool=intent.name, order_ids=[context_order_id], from_context=True)
            ]
        return Understood(fresh, order)
    if outcome is Outcome.WHICH_ORDER and intent is not None:
        if intent.name in (STATUS_TOOL, "track_parcel"):
            return Understood(fresh, order, refusal="missing_order_id")
        amount = amount_in(fold_text(reading.cleaned))
        fresh.clarify = which_order(intent.name, [], context_order_id, reading, language, amount)
        return Understood(fresh, order, refusal="needs_clarification")
    if outcome is Outcome.ACTION and intent is not None:
        target = facts_orders(understood)
        args: dict[str, str | None] = {}
        if intent.name == Action.ADDRESS:
            args["address"] = reading.address
        if intent.name == Action.REFUND:
            args["amount"] = amount_in(fold_text(reading.cleaned))
        if any(v is None for v in args.values()):
            amount = args.get("amount")
            fresh.clarify = which_order(
                intent.name, list(target), context_order_id, reading, language, amount
            )
            return Understood(fresh, order, refusal="needs_clarification")
        fresh.intents = [
            Intent(
                tool=intent.name,
                order_ids=list(target),
                args={k: v for k, v in args.items() if v is not None},
                clause=reading.cleaned[:200],
            )
        ]
        return Understood(fresh, order)
    # Choices: the closest things the bot can do, as buttons.
    fresh.choices = True
    fresh.clarify = choices(decision, recogniser, understood, reading, language)
    return Understood(fresh, order, refusal="needs_clarification")


def facts_orders(understood: Understood) -> list[str]:
    interp = understood.interpretation
    return [i for i in understood.mention_order if i not in interp.kept]


def choices(
    decision: Decision,
    recogniser: Recogniser,
    understood: Understood,
    reading: Reading,
    language: Language,
) -> Clarification:
    picked = list(decision.choices)
    by_key = {i.key: i for i in recogniser.intents}
    for key in DEFAULT_CHOICES:
        if len(picked) >= MAX_CHOICES:
            break
        default = by_key.get(key)
        if decision.no_actions and default is not None and default.name in HIGH_RISK_TOOLS:
            continue
        if default is not None and default not in picked:
            picked.append(default)
    orders = facts_orders(understood)
    options = [_option(i, orders, reading, language) for i in picked[:MAX_CHOICES]]
    question = (_MENU_QUESTION if decision.menu else _CHOICES_QUESTION)[language]
    return Clarification(question=question, options=options)


def _option(
    intent: IntentDef, orders: list[str], reading: Reading, language: Language
) -> ClarifyOption:
    zh = language is Language.ZH
    label = (intent.label.zh if zh else intent.label.en) if intent.label else intent.name
    if intent.kind is Kind.TOOL and len(orders) == 1 and intent.name != Action.ADDRESS:
        text = option_text(intent.name, orders[0], language, reading.address)
    elif intent.option is not None:
        text = intent.option.zh if zh else intent.option.en
    else:
        examples = intent.examples.zh if zh else intent.examples.en
        text = examples[0] if examples else label
    return ClarifyOption(label=label[:64], text=text[:300])


def unsupported_items(keys: Sequence[str]) -> list[str]:
    """The can't-do topics of built-in unsupported items, in order, once each."""
    known = {u.key for u in UNSUPPORTED}
    return list(dict.fromkeys(UNSUPPORTED_TOPICS.get(k, "other") for k in keys if k in known))


def with_cant_do(understood: Understood) -> Understood:
    """The rule reading's unsupported items named by their can't-do topic."""
    topics = unsupported_items(understood.unsupported_keys)
    interp = understood.interpretation
    if interp.unrecognised:
        topics = ["other"]
    for topic in topics:
        if topic not in interp.unsupported_topics:
            interp.unsupported_topics.append(topic)
    return replace(understood)
