"""The rule planner's understanding: a `Reading` in, an `Interpretation` out.

How a message is understood, in order:
  1. a request for a person wins over everything (the person handles the rest);
  2. an id-like token that is not an order id ("1001", "A10O1") is asked about, never
     guessed and never replaced by an earlier order;
  3. each clause is read on its own: actions (cancel, return, refund, address change, and
     any catalog tool's declared phrases), whether they are negated ("don't cancel") or only
     asked about ("can I return …?" is a policy question), reads (status, parcel tracking),
     policy topics, kept orders ("keep A1001"), choosing words ("A or B"), what no tool
     serves, and whether the clause is instructions to the assistant (never followed);
  4. an action targets the orders of its own clause, or the one order the message names;
     anything else (no order, several, a choice, only an earlier order) is a question back;
  5. reads target their clause's orders, or all orders the message names; with none named
     they may use the chat's earlier order, and say so;
  6. an order named with nothing asked about it gets its status read (unless the message
     asks something no tool serves, or hides instructions: then only what was asked).
Keyword tables are data (`agent_core.lexicon`, `agent_core.lexicon_intents`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from agent_core.interpretation import (
    Clarification,
    ClarifyOption,
    Handoff,
    Intent,
    Interpretation,
    PolicyLookup,
)
from agent_core.lexicon import (
    CONDITION,
    DELAY_TOPICS,
    ORDER_NOUN,
    ORDER_REF,
    POLICY_MARKERS,
    STATUS_STRONG,
    STATUS_WEAK,
    TOPIC_PATTERNS,
    PolicyTopic,
)
from agent_core.lexicon_intents import (
    ACTIONS,
    ADDRESS_CHAR,
    AMOUNT,
    CHOOSE,
    HANDOFF,
    KEEP,
    NEGATION_CHARS_ZH,
    NEGATION_WORDS_EN,
    NEGATORS_EN,
    NEGATORS_ZH,
    OPTION_TEXTS,
    POINTER,
    QUESTION_EN,
    QUESTION_ZH,
    SMALL_TALK,
    TRACK,
    TRACK_TOOL,
    UNSUPPORTED,
    Action,
)
from agent_core.models import Language
from agent_core.reading import Clause, Reading

STATUS_TOOL = "get_order_status"
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
MAX_REASON_CHARS = 200


class Mention(IntEnum):
    """How clearly a message names delay compensation."""

    NONE = 0
    WEAK = 1  # "delayed", "late delivery", "延迟"
    STRONG = 2  # "compensation", "after-sales", "补偿", "售后"


@dataclass(frozen=True)
class CustomPhrases:
    """A catalog tool declared with phrases (TOML): a keyword plans it on the named order."""

    tool: str
    pattern: re.Pattern[str]
    high_risk: bool


@dataclass
class _Verb:
    tool: str
    start: int
    negated: bool
    question: bool
    topic: str | None


@dataclass
class _View:
    """What one clause says."""

    clause: Clause
    text: str = ""  # the clause's canonical text before anything was blanked
    verbs: list[_Verb] = field(default_factory=list)
    status: bool = False
    track: bool = False
    topics: list[PolicyTopic] = field(default_factory=list)
    unsupported: list[int] = field(default_factory=list)  # indexes into UNSUPPORTED
    keep: bool = False
    choose: bool = False

    @property
    def requests(self) -> list[_Verb]:
        return [v for v in self.verbs if not v.negated and not v.question]

    @property
    def bare(self) -> bool:
        """Only order ids: part of a neighbouring clause's list ("A1001, A1002 到哪了")."""
        return (
            bool(self.clause.ids)
            and not (self.verbs or self.status or self.track or self.topics or self.keep)
            and not self.unsupported
            and _only_ids(self.clause.canonical)
        )


def _only_ids(text: str) -> bool:
    rest = re.sub(r"[\ue000-\uefff]|\b(?:and|orders?|&|the|my)\b|[和跟与及、,，\s—-]", "", text)
    return not rest


@dataclass(frozen=True)
class Understood:
    """The interpretation and what the plan builder needs besides it."""

    interpretation: Interpretation
    mention_order: list[str]  # the orders in the order they were first mentioned
    delay: Mention = Mention.NONE
    condition: bool = False
    refusal: str | None = None  # "empty", "missing_order_id", "unsupported", …


def understand(
    reading: Reading,
    language: Language,
    *,
    context_order_id: str | None,
    custom: Sequence[CustomPhrases] = (),
    amount_required: bool = True,
) -> Understood:
    interp = Interpretation(language=language.value)
    order = list(reading.order_ids)
    text_for_staff = _clip(reading.cleaned)

    if _asks_for_a_person(reading):
        interp.handoff = Handoff(reason=text_for_staff)
        return Understood(interp, order, refusal="handoff")

    if reading.suspects:
        interp.clarify = _about_suspects(reading, language)
        return Understood(interp, order, refusal="needs_clarification")

    views = [_view(clause, custom) for clause in reading.clauses]
    views = _merge_bare(views)
    order_context = bool(order) or any(
        ORDER_REF.search(v.clause.canonical) or STATUS_STRONG.search(v.clause.canonical)
        for v in views
    )
    delay = Mention.NONE
    for view in views:
        view.topics, found_delay = _topics(view, order_context, bool(order))
        delay = max(delay, found_delay)
    condition = any(CONDITION.search(v.clause.canonical) for v in views)

    # Instructions addressed to the assistant: never followed, named when they ask for more.
    if reading.injections:
        interp.ignored_instructions = [_clip(text) for text in reading.injections]
        if reading.injection_demands:
            interp.unsupported.append(_INJECTION_ITEM[language])
    genuine = [v for v in views if not v.clause.injected]
    for view in genuine:
        for index in view.unsupported:
            item = UNSUPPORTED[index]
            label = item.zh if language is Language.ZH else item.en
            if label not in interp.unsupported:
                interp.unsupported.append(label)

    kept = [i for v in genuine if v.keep and not v.requests for i in v.clause.ids]
    interp.kept = list(dict.fromkeys(kept))
    negated_ids = [i for v in genuine for verb in v.verbs if verb.negated for i in v.clause.ids]
    requested_ids = [i for v in genuine if v.requests for i in v.clause.ids]
    only_negated = {i for i in negated_ids if i not in requested_ids}
    candidates = [i for i in order if i not in interp.kept and i not in only_negated]

    ambiguous: list[tuple[str, list[str]]] = []
    intents: list[Intent] = []
    amount = _amount(" ".join(v.text for v in genuine))
    for view in genuine:
        for verb in view.verbs:
            targets = [i for i in view.clause.ids if i not in interp.kept]
            if verb.negated:
                interp.negated.append(_intent(verb.tool, list(view.clause.ids), view))
                continue
            if verb.question:
                continue
            if view.choose and len(targets) != 1:
                ambiguous.append((verb.tool, targets or candidates))
                continue
            if not targets:
                if len(candidates) == 1:
                    targets = candidates
                else:
                    ambiguous.append((verb.tool, candidates))
                    continue
            args: dict[str, str | None] = {}
            if verb.tool == Action.ADDRESS:
                args["address"] = reading.address
            if verb.tool == Action.REFUND:
                args["amount"] = _amount(view.text) or amount
            if any(v is None for v in args.values()) and (
                verb.tool == Action.ADDRESS or amount_required
            ):
                ambiguous.append((verb.tool, targets))  # ask for the missing value
                continue
            intents.append(_intent(verb.tool, targets, view, args))

    if ambiguous:
        tool, options = ambiguous[0]
        interp.clarify = _which_order(tool, options, context_order_id, reading, language, amount)
        return Understood(interp, order, refusal="needs_clarification")

    # Policy questions: topics, and actions only asked about ("can I return A1002?").
    topics: list[PolicyTopic] = []
    for view in genuine:
        topics.extend(view.topics)
        for verb in view.verbs:
            if verb.question and verb.topic and not view.topics:
                topics.append(PolicyTopic(verb.topic))
    topics = list(dict.fromkeys(topics))
    interp.policies = [PolicyLookup(topic=t.value) for t in topics]

    # Reads: the clause's orders, else every order the message names, else the earlier one.
    wants_context = False
    read_intents: list[Intent] = []
    for view in genuine:
        if not (view.status or view.track):
            continue
        tool = TRACK_TOOL if view.track else STATUS_TOOL
        targets = list(view.clause.ids) or [i for i in order if i not in interp.kept]
        if targets:
            read_intents.append(_intent(tool, targets, view))
        else:
            wants_context = True
            read_intents.append(_intent(tool, [], view))
    pointer = any(POINTER.search(v.clause.canonical) for v in genuine)
    if (
        not order
        and context_order_id
        and ((wants_context and not topics) or (pointer and (topics or wants_context)))
    ):
        interp.context_order_id = context_order_id
        for intent in read_intents:
            if not intent.order_ids:
                intent.order_ids = [context_order_id]
                intent.from_context = True
        if not read_intents:
            read_intents.append(
                Intent(tool=STATUS_TOOL, order_ids=[context_order_id], from_context=True)
            )
    missing = [r for r in read_intents if not r.order_ids]
    read_intents = [r for r in read_intents if r.order_ids]

    # An order named with nothing asked about it: its status.
    covered = {i for intent in [*intents, *read_intents] for i in intent.order_ids}
    if not interp.unsupported and not reading.injections:
        for view in genuine:
            rest = [i for i in view.clause.ids if i not in covered and i not in interp.kept]
            rest = [i for i in rest if i not in only_negated]
            if rest:
                read_intents.append(_intent(STATUS_TOOL, rest, view))
                covered.update(rest)

    interp.intents = [*read_intents, *intents]
    if interp.intents or interp.policies:
        return Understood(interp, order, delay, condition)
    if missing:
        return Understood(interp, order, refusal="missing_order_id")
    if not interp.unsupported and not SMALL_TALK.match(reading.cleaned.strip().lower()):
        interp.unsupported.append(text_for_staff)
        interp.unrecognised = True
    return Understood(interp, order, refusal="unsupported")


_INJECTION_ITEM = {
    Language.ZH: "执行消息里写给助手的指令",
    Language.EN: "following instructions written to the assistant inside a message",
}


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


def _intent(
    tool: str, order_ids: list[str], view: _View, args: dict[str, str | None] | None = None
) -> Intent:
    return Intent(
        tool=tool,
        order_ids=list(dict.fromkeys(order_ids)),
        args={k: v for k, v in (args or {}).items() if v is not None},
        clause=_clip(view.clause.raw),
    )


def _asks_for_a_person(reading: Reading) -> bool:
    for clause in reading.clauses:
        if clause.injected:
            continue
        for match in HANDOFF.finditer(clause.canonical):
            if not _negated(clause.canonical, match.start()):
                return True
    return False


def _negated(text: str, start: int) -> bool:
    """Whether a negator ends just before position `start` ("don't cancel", "不要取消")."""
    before = text[:start]
    if _HAN.search(text[start : start + 1]) or (before and _HAN.search(before[-1:])):
        for match in NEGATORS_ZH.finditer(before):
            if len(before) - match.end() <= NEGATION_CHARS_ZH:
                return True
    for match in NEGATORS_EN.finditer(before):
        gap = before[match.end() :].split()
        if len(gap) <= NEGATION_WORDS_EN:
            return True
    return False


def _question(text: str, start: int) -> bool:
    """Whether the verb at `start` is asked about ("can I return …?", "A1002 能退货吗")."""
    if QUESTION_EN.search(text[:start]):
        return True
    return bool(_HAN.search(text)) and QUESTION_ZH.search(text) is not None


def _view(clause: Clause, custom: Sequence[CustomPhrases]) -> _View:
    view = _View(clause, clause.canonical)
    text = residual = clause.canonical
    for terms in ACTIONS:
        for match in terms.verbs.finditer(residual):
            if match.start() == match.end():
                continue
            question = _question(text, match.start()) and ADDRESS_CHAR not in text
            view.verbs.append(
                _Verb(
                    terms.action.value,
                    match.start(),
                    _negated(text, match.start()),
                    question,
                    terms.topic,
                )
            )
            if not question:  # a question stays for the policy topics to find
                residual = _blank(residual, *match.span())
    if ADDRESS_CHAR in text and not any(v.tool == Action.ADDRESS for v in view.verbs):
        at = text.index(ADDRESS_CHAR)
        view.verbs.append(_Verb(Action.ADDRESS.value, at, _negated(text, at), False, None))
    declared = False  # a catalog tool serves what the built-in tables call unsupported
    for phrases in custom:
        for match in phrases.pattern.finditer(residual):
            if match.start() == match.end():
                continue
            declared = True
            view.verbs.append(
                _Verb(phrases.tool, match.start(), _negated(text, match.start()), False, None)
            )
            residual = _blank(residual, *match.span())
    view.verbs.sort(key=lambda v: v.start)
    if (track := TRACK.search(residual)) is not None:
        view.track = True
        residual = _blank(residual, *track.span())
    view.clause = Clause(residual, clause.ids, clause.injected, clause.raw)
    if not declared:
        view.unsupported = [i for i, u in enumerate(UNSUPPORTED) if u.terms.search(text)]
    view.keep = KEEP.search(text) is not None
    view.choose = CHOOSE.search(text) is not None
    return view


def _topics(
    view: _View, order_context: bool, message_ids: bool
) -> tuple[list[PolicyTopic], Mention]:
    """Policy topics of a clause (each match blanked before the next topic looks), and how
    strongly delay compensation was mentioned. Sets the clause's status read from what
    the topics left."""
    residual = view.clause.canonical
    seen = residual
    rules_clause = POLICY_MARKERS.search(residual) is not None
    found: list[tuple[int, PolicyTopic]] = []
    delay = Mention.NONE
    for topic, strong, weak in TOPIC_PATTERNS:
        for pattern in (strong, weak):
            for match in list(pattern.finditer(seen)):
                start, end = match.span()
                if start == end:
                    continue
                seen = _blank(seen, start, end)
                if _negated(residual, start):
                    residual = _blank(residual, start, end)
                    continue
                if topic in DELAY_TOPICS:
                    delay = max(delay, Mention.STRONG if pattern is strong else Mention.WEAK)
                if pattern is strong or rules_clause or not order_context:
                    found.append((start, topic))
                    residual = _blank(residual, start, end)
    found.sort(key=lambda item: item[0])
    names_order = bool(
        view.clause.ids
        or message_ids
        or ORDER_REF.search(residual)
        or POINTER.search(residual)
        or ORDER_NOUN.search(residual)
    )
    view.status = (
        STATUS_STRONG.search(residual) is not None
        or (names_order and STATUS_WEAK.search(residual) is not None)
        or _only_a_reference(residual)
    )
    return list(dict.fromkeys(t for _, t in found)), delay


def _only_a_reference(text: str) -> bool:
    """ "my order?", "这单?": naming an order and nothing else asks for its status."""
    match = ORDER_REF.search(text)
    return match is not None and not re.sub(r"[\W_]", "", _blank(text, *match.span()))


def _merge_bare(views: list[_View]) -> list[_View]:
    """Fold clauses that only list order ids into the clause they belong to."""
    merged: list[_View] = []
    pending: list[str] = []
    for view in views:
        if view.bare:
            if merged and merged[-1].clause.ids and not merged[-1].bare:
                _add_ids(merged[-1], view.clause.ids)
            else:
                pending.extend(view.clause.ids)
            continue
        if pending:
            _add_ids(view, tuple(pending), front=True)
            pending = []
        merged.append(view)
    if pending:
        merged.append(_View(Clause(" ".join(pending), tuple(pending), False, "")))
    return merged


def _add_ids(view: _View, ids: tuple[str, ...], *, front: bool = False) -> None:
    joined = (*ids, *view.clause.ids) if front else (*view.clause.ids, *ids)
    c = view.clause
    view.clause = Clause(c.canonical, tuple(dict.fromkeys(joined)), c.injected, c.raw)


def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def _amount(text: str) -> str | None:
    match = AMOUNT.search(text)
    if match is None:
        return None
    return match.group("a") or match.group("b") or match.group("c")


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


def _which_order(
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
    )


def _about_suspects(reading: Reading, language: Language) -> Clarification:
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
