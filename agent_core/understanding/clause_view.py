"""What one clause of a message says, for the rule planner's understanding.

A clause is read on its own: its action verbs (with whether each is negated or only asked
about), its reads (status, parcel tracking), its policy topics, its kept orders, its
choosing words and what no tool serves. Clauses that only list order ids are folded into
the clause they belong to. Keyword tables are data (`agent_core.understanding.lexicon`,
`agent_core.understanding.lexicon_intents`); `agent_core.understanding.understand` resolves the clauses together.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Final

from agent_core import lazyre
from agent_core.understanding.lexicon import (
    DELAY_TOPICS,
    ORDER_NOUN,
    ORDER_REF,
    POLICY_MARKERS,
    STATUS_STRONG,
    STATUS_WEAK,
    TOPIC_PATTERNS,
    PolicyTopic,
)
from agent_core.understanding.lexicon_intents import (
    ACTIONS,
    ADDRESS_CHAR,
    AMOUNT,
    CHOOSE,
    KEEP,
    MONEY_OBJECT,
    NEGATION_CHARS_ZH,
    NEGATION_FILLERS_ZH,
    NEGATION_WORDS_EN,
    NEGATORS_EN,
    NEGATORS_ZH,
    POINTER,
    QUESTION_EN,
    QUESTION_ZH,
    SENT_TO_A_PLACE,
    TRACK,
    TRACK_CITED,
    UNSUPPORTED,
    Action,
)
from agent_core.understanding.reading import Clause
from agent_core.understanding.recognition.precision import (
    ACTION_NOUN_AFTER,
    ASK_PASSIVE,
    ASKED_ADDRESS,
    CANCEL_NOT_AN_ORDER,
    CANCEL_OBJECT_AFTER,
    CANCEL_OBJECT_BEFORE,
    CHOOSE_ONE_ZH,
    FALLBACK_BEFORE,
    FRAME_ONLY,
    GENERAL,
    HEDGE_AFTER_EN,
    HEDGE_EN,
    INVERTED_QUESTION_AFTER,
    LEFT_ALONE_ZH,
    NEGATED_OBJECT_EN,
    ORDER_ETA,
    PASSIVE_TOOLS,
    WISH_FORMS,
    WITHDRAWN_AFTER,
    WITHDRAWN_BEFORE,
    ZH_VAGUE_REFUND,
    about_an_item,
    asked_where_it_went,
    done_after,
    imagined_by_bot,
    negated_after,
    negated_strictly,
    past_question,
    polite_request,
    reported,
    status_frames,
    threat,
    threat_after,
    whether_question,
    zh_asks,
    zh_done,
)

_HAN = lazyre.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


class Mention(IntEnum):
    """How clearly a message names delay compensation."""

    NONE = 0
    WEAK = 1  # "delayed", "late delivery", "延迟"
    STRONG = 2  # "compensation", "after-sales", "补偿", "售后"


@dataclass(frozen=True)
class CustomPhrases:
    """A catalog tool declared with phrases (TOML): a keyword plans it on the named order."""

    tool: str
    pattern: lazyre.LazyPattern
    high_risk: bool


@dataclass
class Verb:
    tool: str
    start: int
    negated: bool
    question: bool
    topic: str | None
    # Somebody else's wish ("my friend wants to cancel B2001"): asked about, never done.
    reported: bool = False
    # About an item of the order, not the order ("A1007 的围巾不要了"): no tool serves it.
    item: bool = False


@dataclass
class View:
    """What one clause says."""

    clause: Clause
    text: str = ""  # the clause's canonical text before anything was blanked
    verbs: list[Verb] = field(default_factory=list)
    status: bool = False
    track: bool = False
    topics: list[PolicyTopic] = field(default_factory=list)
    unsupported: list[int] = field(default_factory=list)  # indexes into UNSUPPORTED
    keep: bool = False
    choose: bool = False

    @property
    def requests(self) -> list[Verb]:
        return [v for v in self.verbs if not (v.negated or v.question or v.reported or v.item)]

    @property
    def bare(self) -> bool:
        """Only order ids: part of a neighbouring clause's list ("A1001, A1002 到哪了")."""
        return (
            bool(self.clause.ids)
            and not (self.verbs or self.status or self.track or self.topics or self.keep)
            and not self.unsupported
            and only_ids(self.clause.canonical)
        )


def only_ids(text: str) -> bool:
    rest = re.sub(r"[\ue000-\uefff]|\b(?:and|orders?|&|the|my)\b|[和跟与及、,，\s—-]", "", text)
    return not rest


_ASKS_ABOUT = lazyre.compile(
    r"^\W*(?:can|could|is|are|would|will|may)\s+(?!you\b|u\b|ya\b)|too late to"
)


def negated(text: str, start: int) -> bool:
    """Whether a negator ends just before position `start` ("don't cancel", "不要取消")."""
    before = text[:start]
    if negated_strictly(before):
        return True
    if _HAN.search(text[start : start + 1]) or (before and _HAN.search(before[-1:])):
        for match in NEGATORS_ZH.finditer(before):
            at = match.start() + match.group(0).find("不")
            if 0 < at < len(before) - 1 and before[at - 1] == before[at + 1]:
                continue  # "要不要取消", "能不能退": a question (A-not-A), not a negation
            between = before[match.end() :]
            if "了" in between or between.startswith("啦"):
                continue  # "不要了不要了", "其中一单不需要了帮我取消掉": 了 closes the negated phrase
            if len(between) <= NEGATION_CHARS_ZH or NEGATION_FILLERS_ZH.fullmatch(between):
                return True
    for match in NEGATORS_EN.finditer(before):
        # "don't want A1005's address changed": an order named as the owner is no object.
        words = re.sub(r"[\ue000-\uefff]\s*'s\b", "its", before[match.end() :]).split()
        # "we dont need it anymore, cancel", "I'd rather not keep A1007 please cancel it":
        # the negator's own verb took its object first; the action is not negated.
        # An action in between keeps the old reach ("don't cancel A1001 return it" negates
        # both: never an action the customer may not have asked for).
        if len(words) <= NEGATION_WORDS_EN and (
            not any(_OBJECT.fullmatch(w) for w in words)
            or any(t.verbs.search(" ".join(words)) for t in ACTIONS)
        ):
            return True
    return False


# A word that ends what a negator governs ("it", "anymore", an order id).
_OBJECT = lazyre.compile(
    r"(?:it|them|these|those|anymore|so|but|because|[\ue000-\uefff])[,.]?"
)  # … or a conjunction: "A1002 doesn't fit so I'm sending it back"


def is_question(text: str, start: int) -> bool:
    """Whether the verb at `start` is asked about ("can I return …?", "A1002 能退货吗")."""
    if QUESTION_EN.search(text[:start]):
        return True
    return bool(_HAN.search(text)) and QUESTION_ZH.search(text) is not None


# How many mentions of one phrase in one clause are weighed, each against the clause's whole
# text (its negators, questions and frames can sit anywhere in it). A person writes an action
# word a few times at most ("cancel cancel CANCEL A1003!!"); thousands of them ("退货" × 2,000 in
# one 4,096-character message) made each one a scan of the whole text: 60 s of CPU for one
# message. Past the cap the clause is *flooded* and every action in it is only asked about
# (the order's status and the policy): reading fewer mentions may never add an action.
MAX_MENTIONS: Final = 8


class _Mentions:
    """The non-empty matches of a phrase in a clause, at most `MAX_MENTIONS` of them."""

    def __init__(self) -> None:
        self.flooded = False

    def of(self, pattern: lazyre.LazyPattern, text: str) -> Iterator[re.Match[str]]:
        seen = 0
        for match in pattern.finditer(text):
            if match.start() == match.end():
                continue
            if seen == MAX_MENTIONS:
                self.flooded = True
                return
            seen += 1
            yield match


def view_of(clause: Clause, custom: Sequence[CustomPhrases]) -> View:
    view = View(clause, clause.canonical)
    text = residual = clause.canonical
    mentions = _Mentions()
    for terms in ACTIONS:
        for match in mentions.of(terms.verbs, residual):
            if terms.action is Action.RETURN and MONEY_OBJECT.match(text, match.end()):
                continue  # "return my money for A1002": the money, not the parcel (a refund)
            past = past_question(text, match.start(), match.end())
            # Somebody else's wish ("my friend wants to cancel B2001") is read as a question
            # about the action: the order's status and the policy, never the action.
            told = reported(text[: match.start()])
            # … and what somebody else already did ("室友说他帮我把 A1003 取消了"): status.
            past = past or (told and done_after(text[match.end() :]))
            past = past or zh_done(text, match.start(), match.end())
            # "Could I kindly have 12.99 refunded for A1002?": a question that carries the
            # concrete amount is the request (as a new address makes one of an address change).
            # Round 8: so does a place named for an order ("can A1005 go to my neighbour's
            # instead?"): asked for, with the street still to be asked.
            concrete = (terms.action is Action.REFUND and AMOUNT.search(text) is not None) or (
                terms.action is Action.ADDRESS
                and SENT_TO_A_PLACE.match(text, match.start()) is not None
            )
            asked = (
                (
                    (
                        is_question(text, match.start())
                        and not concrete
                        and not polite_request(text[: match.start()])
                    )
                    or past
                    or whether_question(text, match.start(), match.end())
                    or (zh_asks(text, match.start(), match.end(), clause.asked) and not concrete)
                    or HEDGE_EN.search(text[: match.start()]) is not None
                    # "if you cancel A1003 do I get my money back?": imagined, in a question
                    or (
                        imagined_by_bot(text[: match.start()])
                        and (clause.asked or INVERTED_QUESTION_AFTER.match(text, match.end()))
                    )
                    or HEDGE_AFTER_EN.search(text[match.end() :]) is not None
                    # "A1003 can be called off?": said with a question mark, asked (round 8)
                    or (clause.asked and " can be " in match.group(0))
                    # "can the address on A1003 still be changed?", "is it too late to change
                    # where A1005 is going?": with no new address, a question about it
                    or (
                        terms.action is Action.ADDRESS
                        and _ASKS_ABOUT.search(text) is not None
                        and not concrete
                    )
                )
                and ADDRESS_CHAR not in text
            )
            question = asked or told  # a new address someone else wants is asked about too
            # A maybe or a threat ("we might need to cancel A1005", "i'll cancel A1003 unless it
            # ships") is no request and no question either: the order's status (round 8).
            later = threat(text[: match.start()]) or threat_after(
                text[: match.start()], text[match.end() :]
            )
            question = question and not (later and not told)
            view.verbs.append(
                Verb(
                    terms.action.value,
                    match.start(),
                    negated(text, match.start())
                    or later
                    or NEGATED_OBJECT_EN.match(text, match.end()) is not None
                    or (
                        terms.action is Action.CANCEL
                        and (
                            CANCEL_NOT_AN_ORDER.match(text, match.end()) is not None
                            or ACTION_NOUN_AFTER.match(text, match.end()) is not None
                        )
                    )
                    or WITHDRAWN_BEFORE.search(text[: match.start()]) is not None
                    or WITHDRAWN_AFTER.match(text, match.end()) is not None
                    or FALLBACK_BEFORE.search(text[: match.start()]) is not None
                    or (
                        negated_after(text[match.end() :], text[: match.start()])
                        and not text[match.end() :].lstrip().startswith(match.group(0))
                    )
                    # "地址不用改": the negator sits inside the address phrase
                    or (
                        terms.action is Action.ADDRESS and bool(NEGATORS_ZH.search(match.group(0)))
                    ),
                    question,
                    None if past else terms.topic,  # "why did you cancel": status only
                    told,
                    terms.action is Action.CANCEL
                    and about_an_item(text[: match.start()], text[match.end() :]),
                )
            )
            if not question or past:  # a question stays for the policy topics to find;
                residual = blank(residual, *match.span())  # what happened asks no policy
    # "I no longer want to cancel A1003": "no longer want" only frames the verb after it.
    view.verbs = [
        v
        for v in view.verbs
        if not any(
            w.start > v.start and FRAME_ONLY.match(text[v.start : w.start]) for w in view.verbs
        )
    ]
    # "A1002 和 A1006 退一个就行", "取消其中一单": an action on one of several, not chosen.
    for match in mentions.of(CHOOSE_ONE_ZH, residual):
        tool = Action.CANCEL.value if match.group("cancel") else Action.RETURN.value
        if not any(v.tool == tool for v in view.verbs):
            view.verbs.append(Verb(tool, match.start(), False, False, None))
            view.choose = True
    for match in mentions.of(WISH_FORMS, residual):
        # "my dad wants A1003 cancelled": the wish's own verb ("wants") names whose it is.
        if not reported(text[: match.end()]):
            continue
        if match.group("cancel"):
            tool, topic = Action.CANCEL.value, "cancellation"
        elif match.group("ret") or match.group("zret"):
            tool, topic = Action.RETURN.value, "refund"
        else:
            tool, topic = Action.REFUND.value, "refund"
        if not any(v.tool == tool for v in view.verbs):
            view.verbs.append(Verb(tool, match.start(), False, True, topic, True))
    for match in mentions.of(ZH_VAGUE_REFUND, residual):
        if not any(v.tool == Action.REFUND for v in view.verbs):
            asked = is_question(text, match.start()) or zh_asks(
                text, match.start(), match.end(), clause.asked
            )
            view.verbs.append(
                Verb(
                    Action.REFUND.value,
                    match.start(),
                    negated(text, match.start()),
                    asked,
                    "refund",
                )
            )
    if QUESTION_EN.search(text) and not any(v.tool == Action.ADDRESS for v in view.verbs):
        for match in mentions.of(ASKED_ADDRESS, residual):
            if QUESTION_EN.search(text[: match.start()]):
                view.verbs.append(
                    Verb(Action.ADDRESS.value, match.start(), False, True, "shipping")
                )
                break
    # "can A1003 be cancelled?", "is A1003 cancellable?": asked about, never done.
    for match in mentions.of(ASK_PASSIVE, residual):
        word = match.group("verb") or match.group("able")
        tool, topic = next(v for k, v in PASSIVE_TOOLS.items() if word.startswith(k))
        if not any(v.tool == tool for v in view.verbs):
            view.verbs.append(Verb(tool, match.start(), False, True, topic))
    if ADDRESS_CHAR in text and not any(v.tool == Action.ADDRESS for v in view.verbs):
        at = text.index(ADDRESS_CHAR)
        told = reported(text[:at])
        went = asked_where_it_went(text[:at])  # "did A1007 go to …?": its status only
        view.verbs.append(
            Verb(
                Action.ADDRESS.value,
                at,
                negated(text, at),
                told or went,
                "shipping" if told else None,
                told,
            )
        )
    declared = False  # a catalog tool serves what the built-in tables call unsupported
    for phrases in custom:
        for match in mentions.of(phrases.pattern, residual):
            declared = True
            view.verbs.append(
                Verb(phrases.tool, match.start(), negated(text, match.start()), False, None)
            )
            residual = blank(residual, *match.span())
    # "cancel the return on A1002", "取消 A1003 的加急": something on the order is cancelled.
    for verb in view.verbs:
        if verb.tool != Action.CANCEL.value or not clause.ids:
            continue
        word = re.match(r"[a-z]+|[\u4e00-\u9fff]{2}|\S+", text[verb.start :])
        end = verb.start + (len(word.group(0)) if word else 0)
        # "A1002 退货取消": the cancel is negated as "the return is not wanted"; either way
        # what is withdrawn is the return, so nothing on the order is asked for.
        if (
            not verb.negated and CANCEL_OBJECT_AFTER.match(text, end)
        ) or CANCEL_OBJECT_BEFORE.search(text[: verb.start]):
            for other in view.verbs:
                other.negated = True
    if mentions.flooded:
        for verb in view.verbs:
            verb.question = True
    view.verbs.sort(key=lambda v: v.start)
    cited = residual  # a statement citing the tracking asks no tracking; a question does
    if "?" not in text and not re.match(r"\W*(?:is|are|has|have|does|did|can|could)\b", text):
        cited = TRACK_CITED.sub(lambda m: " " * len(m.group(0)), residual)
    if (track := TRACK.search(cited)) is not None:
        view.track = True
        residual = blank(residual, *track.span())
    view.clause = replace(clause, canonical=residual)
    if not declared:
        view.unsupported = [i for i, u in enumerate(UNSUPPORTED) if u.terms.search(text)]
    view.keep = KEEP.search(text) is not None or (
        not view.verbs and LEFT_ALONE_ZH.search(text) is not None
    )
    view.choose = view.choose or CHOOSE.search(text) is not None
    return view


# The warranty words that ask for a repair, not only say what is wrong with the item.
REPAIR: Final = lazyre.compile(r"repair|维修|修理")


# Two questions joined inside one clause.
JOINED: Final = lazyre.compile(
    r"(?<![a-z])(?:and|also|plus|or)(?![a-z])|还有|另外|以及|顺便|、|和|与|及"
)
JOINED_AT_START: Final = lazyre.compile(
    r"^\W*(?:(?:and|also|plus|btw)(?![a-z])|还有|另外|以及|顺便(?:问一?下)?)\W*"
)


def topics_of(
    view: View, order_context: bool, message_ids: bool, complaint: bool = False
) -> tuple[list[PolicyTopic], Mention]:
    """Policy topics of a clause (each match blanked before the next topic looks), and how
    strongly delay compensation was mentioned. Sets the clause's status read from what
    the topics left."""
    residual = view.clause.canonical
    seen = residual
    rules_clause = POLICY_MARKERS.search(residual) is not None
    found: list[tuple[int, PolicyTopic]] = []
    in_passing: set[int] = set()
    condition: set[int] = set()
    delay = Mention.NONE
    # A complaint's words name no policy by the way ("complain about the delivery guy").
    complaint = complaint or any(UNSUPPORTED[i].key == "complaint" for i in view.unsupported)
    # "has A1002 been refunded yet?", "A1002 的退货进度", "where is my exchange order A1005?":
    # an action word naming something under way on an order asks its status, not a policy.
    frames = status_frames(view.text) if (view.clause.ids or message_ids) else []
    if view.clause.ids and not GENERAL.search(view.text):
        frames += [m.span() for m in ORDER_ETA.finditer(view.text)]
    # "is there a delay with A1005": whether the order is late, not the compensation rules.
    only_is_there = view.clause.ids and not POLICY_MARKERS.search(
        re.sub(r"(?<![a-z])(?:is|are) there(?![a-z])", " ", residual)
    )
    mentions = _Mentions()  # a policy topic read fewer times is still no action
    for topic, strong, weak in TOPIC_PATTERNS:
        for pattern in (strong, weak):
            for match in list(mentions.of(pattern, seen)):
                start, end = match.span()
                seen = blank(seen, start, end)
                if topic is PolicyTopic.SHIPPING and residual[end:].lstrip().startswith(
                    ADDRESS_CHAR
                ):
                    residual = blank(residual, start, end)
                    continue  # "ship A1003 to <address>" asks for the address change only
                if any(s < end and start < e for s, e in frames):
                    residual = blank(residual, start, end)
                    continue
                if negated(residual, start) or WITHDRAWN_BEFORE.search(view.text[:start]):
                    # "scratch the cancellation of A1003": taken back, no policy asked
                    residual = blank(residual, start, end)
                    continue
                if pattern is weak and topic in DELAY_TOPICS and only_is_there:
                    continue
                if topic in DELAY_TOPICS:
                    delay = max(delay, Mention.STRONG if pattern is strong else Mention.WEAK)
                if pattern is strong or ((rules_clause or not order_context) and not complaint):
                    found.append((start, topic))
                    residual = blank(residual, start, end)
                    if pattern is weak and topic is PolicyTopic.SHIPPING:
                        in_passing.add(start)
                    if (
                        pattern is weak
                        and topic is PolicyTopic.WARRANTY
                        and not REPAIR.search(match.group(0))
                    ):
                        condition.add(start)
    # "do I get compensation if my delivery is late?", "发货后还能取消吗": a bare "delivery" /
    # "发货" beside another topic says when, not that shipping is asked about.
    if any(t is not PolicyTopic.SHIPPING for _, t in found):
        found = [f for f in found if f[0] not in in_passing]
    # "can I get a refund if it's faulty?", "质量问题能退货吗": a bare "faulty" / "坏了" beside
    # another topic says why, not that the warranty is asked about ("repair" still does).
    if any(t is not PolicyTopic.WARRANTY for _, t in found):
        found = [f for f in found if f[0] not in condition]
    # "退货运费谁出", "do you refund the shipping cost when I return something?": what sending
    # a return back costs is the return policy's question, not shipping's (a clause joining
    # two questions, "how much is shipping and do you take returns", keeps both).
    # A joiner that opens the clause ("另外退货运费谁出") joins it to the one before, not two
    # questions inside it (round 5).
    inside = JOINED_AT_START.sub("", view.text)
    if any(t is PolicyTopic.REFUND for _, t in found) and not JOINED.search(inside):
        found = [f for f in found if f[1] is not PolicyTopic.SHIPPING]
    found.sort(key=lambda item: item[0])
    names_order = bool(
        view.clause.ids
        or message_ids
        or ORDER_REF.search(residual)
        or POINTER.search(residual)
        or ORDER_NOUN.search(residual)
    )
    view.status = (
        bool(frames)
        or STATUS_STRONG.search(residual) is not None
        or (names_order and STATUS_WEAK.search(residual) is not None)
        or only_a_reference(residual)
    )
    return list(dict.fromkeys(t for _, t in found)), delay


def only_a_reference(text: str) -> bool:
    """ "my order?", "这单?": naming an order and nothing else asks for its status."""
    match = ORDER_REF.search(text)
    return match is not None and not re.sub(r"[\W_]", "", blank(text, *match.span()))


def merge_bare(views: list[View]) -> list[View]:
    """Fold clauses that only list order ids into the clause they belong to."""
    merged: list[View] = []
    pending: list[str] = []
    for view in views:
        if view.bare:
            if merged and merged[-1].clause.ids and not merged[-1].bare:
                add_ids(merged[-1], view.clause.ids)
            else:
                pending.extend(view.clause.ids)
            continue
        if pending:
            add_ids(view, tuple(pending), front=True)
            pending = []
        merged.append(view)
    if pending:
        merged.append(View(Clause(" ".join(pending), tuple(pending), False, "")))
    return merged


def add_ids(view: View, ids: tuple[str, ...], *, front: bool = False) -> None:
    joined = (*ids, *view.clause.ids) if front else (*view.clause.ids, *ids)
    c = view.clause
    view.clause = replace(c, ids=tuple(dict.fromkeys(joined)))


def blank(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]
