"""Which declared intent a request is closest to, scored over the intents' examples.

Each example becomes a set of features (`normalise`), weighted by how rare the feature is
among all examples (a word every example has, like "order", says little; "unsubscribe"
says a lot). A request's score for an intent is the best cosine similarity between its
features and one of the intent's examples. An inverted index keeps a request to a few
hundred additions: well under the 5 ms budget (bench/recognition_bench.py).

By meaning (issue 33): with an embedding backend, each intent's closest example by cosine
(`embedding.SemanticIndex`) is found; the intent meaning puts first, when it is not an
action, gets the better of its lexical score and its cosine mapped onto the lexical scale
(`meaning_score`). No action is ever raised: meaning can make "where is my refund" a
refund-times question rather than a refund, never the other way round.

Recognition only proposes: the planner decides what a score may lead to (an FAQ answer and
a person are safe to give; an action needs a clean request, an order and a high score, or
it is offered as a choice instead).
"""

from __future__ import annotations

import logging
import math
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from agent_core.understanding.lexicon_intents import ACTION_NAMING_WORDS
from agent_core.understanding.recognition.embedding import EmbeddingUnavailable, SemanticIndex
from agent_core.understanding.recognition.intents import IntentDef
from agent_core.understanding.recognition.normalise import (
    QUESTION_FEATURE,
    SYNONYMS,
    Normaliser,
    stem,
)

log = logging.getLogger(__name__)

# A request at least this close to an intent's best example is recognised as it.
THRESHOLD: Final = 0.45
# An action (a high-risk tool) is planned from recognition only above this, and only with
# a clear margin over the next intent; otherwise it is offered as a choice.
ACTION_THRESHOLD: Final = 0.6
ACTION_MARGIN: Final = 0.05
UNKNOWN_WEIGHT: Final = 3.0
# How much the words of a request that the intent's closest example lacks, but its other
# examples have, add to its score (above the floor; never for an action).
COVERAGE_SHARE: Final = 0.3
COVERAGE_FLOOR: Final = 0.3
UNCOVERED: Final = frozenset({"cancel_order", "request_return", "request_refund", "change_address"})
# The intents whose words say nothing about a change: an order read, the menu. An action
# recognised only on words these share ("订单 A1005" is closest to "取消订单" by "订单" alone)
# is not anchored, and never done.
PLAIN: Final = frozenset({"tool:get_order_status", "tool:track_parcel", "menu:menu"})
# The policy topics that name each action. An action is recognised only on a word its
# examples share with these (cancel, 取消, return, 退货, refund, 退款): "A1002 broken" is
# close to "the item is broken, I want to return it", but asks for no return.
NAMING: Final = {
    "cancel_order": ("faq:cancellation", "faq:cancellation_fee"),
    "request_return": ("faq:returns",),
    "request_refund": ("faq:refund", "faq:refund_times"),
}


# Where a cosine of the local model (multilingual USE v3) starts to say something, and
# where it is as sure as the lexical scorer's best: between them, linear (tuned on the dev
# split only; tests/eval/README.md, "Issue 33: the blind batch, and recognition by meaning").
MEANING_FLOOR: Final = 0.35
MEANING_CEILING: Final = 0.75
# How far meaning's first intent must be ahead of its second (cosines) to raise it: two
# intents of one subject ("how do I delete my account" and "delete my account") are as
# close in meaning as they are apart in what the bot may do; the words tell those apart.
MEANING_MARGIN: Final = 0.05


def meaning_score(
    cosine: float, floor: float = MEANING_FLOOR, ceiling: float = MEANING_CEILING
) -> float:
    """A cosine on the lexical scorer's scale: 0 at `floor` or below, 1 at `ceiling`."""
    return max(0.0, min(1.0, (cosine - floor) / (ceiling - floor)))


# Where the words found an action or one side of a pair (how to do it / do it for me),
# meaning does not overrule them with the other side: both are as close in meaning as they
# are apart in what the bot may do, and the rule reading and the decision table tell them
# apart. The one exception: money a customer is waiting for is not a new refund.
_SIDES: Final = (
    frozenset({"faq:account_help", "cant_do:account"}),
    frozenset({"faq:payment_methods", "cant_do:payment_change"}),
)
_WAITING_FOR: Final = {"tool:request_refund": "faq:refund_times"}


def _may_overrule(by_words: str, by_meaning: str) -> bool:
    """Whether meaning's first intent may be raised over the one the words found."""
    if by_words.startswith("tool:") and by_words.split(":")[1] in UNCOVERED:
        return _WAITING_FOR.get(by_words) == by_meaning
    return not any(by_words in sides and by_meaning in sides for sides in _SIDES)


@dataclass(frozen=True)
class Match:
    intent: IntentDef
    score: float
    example: str
    # The request shares a word with the example that no order read or menu example has.
    anchored: bool = True
    # … and, for an action, a word that names the action (see NAMING).
    named: bool = True
    # A word the order status examples do not have ("哪家快递" has 哪家; "A1001 快递" none):
    # parcel tracking is recognised only on one.
    beyond_status: bool = True


# A backend that failed is not asked again for this long: a down endpoint would otherwise
# cost every request its whole timeout before the fallback answers.
MEANING_RETRY_S: Final = 30.0


class Recogniser:
    def __init__(
        self,
        intents: Sequence[IntentDef],
        meaning: Sequence[SemanticIndex] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`meaning`: indexes of the examples by meaning, in order of preference (an
        endpoint, then the local model); none: lexical only."""
        self.intents = list(intents)
        self.meaning = list(meaning)
        self._unavailable: set[str] = set()
        self._resting: dict[str, float] = {}  # model -> when it may be asked again
        self._clock = clock
        raw = Normaliser()
        vocabulary = {
            stem(w)
            for intent in self.intents
            for text in [*intent.examples.en, *intent.examples.zh]
            for w in raw.words(text)
        }
        # Round 5: a synonym's own stem is a word to repair a typo towards ("reciept" is
        # "receipt", which counts as "invoic"), though examples are stored by what it means.
        self.normaliser = Normaliser(vocabulary | set(SYNONYMS))
        docs: list[tuple[int, str, frozenset[str]]] = []
        for index, intent in enumerate(self.intents):
            for text in [*intent.examples.en, *intent.examples.zh]:
                feats = frozenset(self.normaliser.features(text))
                if feats:
                    docs.append((index, text, feats))
        frequency: dict[str, int] = defaultdict(int)
        for _, _, feats in docs:
            for f in feats:
                frequency[f] += 1
        total = len(docs)
        # A word no example has (a place, a brand, a name) weighs like a common word: it says
        # little about what is asked, and must not drown the words that do.
        self._unknown_weight = UNKNOWN_WEIGHT
        self._weight = {f: math.log((total + 1) / (n + 1)) + 1 for f, n in frequency.items()}
        self._docs = docs
        self._norms = [math.sqrt(sum(self._weight[f] ** 2 for f in feats)) for _, _, feats in docs]
        index_: dict[str, list[int]] = defaultdict(list)
        for number, (_, _, feats) in enumerate(docs):
            for f in feats:
                index_[f].append(number)
        self._index = index_
        # Every feature an intent's examples use: how much of a request an intent's
        # vocabulary covers ("退款一般几天到账" is refund times: 退款 and 到账 are its words,
        # though its closest single example may be another intent's).
        vocab: dict[int, set[str]] = defaultdict(set)
        for intent_index, _, feats in docs:
            vocab[intent_index] |= feats
        self._vocab = vocab
        self._plain = frozenset(
            f for i, intent in enumerate(self.intents) if intent.key in PLAIN for f in vocab[i]
        )
        keys = {intent.key: i for i, intent in enumerate(self.intents)}
        self._status = (
            frozenset(vocab[keys["tool:get_order_status"]])
            if ("tool:get_order_status" in keys)
            else frozenset()
        )
        self._naming = {
            i: frozenset(
                vocab[i]
                & {f for key in NAMING[intent.name] if key in keys for f in vocab[keys[key]]}
            )
            - self._plain
            - {QUESTION_FEATURE}
            | {
                f
                for words in ACTION_NAMING_WORDS.get(intent.name, ())
                for f in self.normaliser.features(words)
            }
            for i, intent in enumerate(self.intents)
            if intent.name in NAMING and intent.key.startswith("tool:")
        }

    def weight(self, feature: str) -> float:
        return self._weight.get(feature, self._unknown_weight)

    def rank(self, text: str, *, meaning: bool | None = None) -> list[Match]:
        """Intents by their best example's similarity to `text`, best first.

        `meaning`: True consults recognition by meaning, False never; None (the default)
        only where the words found nothing (no intent at `THRESHOLD`): a request its words
        settle costs no embedding, and a process that meets only those never loads a model.
        """
        feats = set(self.normaliser.features(text))
        if not feats:
            return []
        norm = math.sqrt(sum(self.weight(f) ** 2 for f in feats))
        dots: dict[int, float] = defaultdict(float)
        for f in feats:
            w = self._weight.get(f)
            if w is None:
                continue
            for number in self._index[f]:
                dots[number] += w * w
        best: dict[int, tuple[float, str]] = {}
        closest: dict[int, int] = {}
        for number, dot in dots.items():
            intent_index, example, _ = self._docs[number]
            score = dot / (norm * self._norms[number])
            if score > best.get(intent_index, (0.0, ""))[0]:
                best[intent_index] = (score, example)
                closest[intent_index] = number
        total = norm * norm
        for intent_index, (score, example) in best.items():
            if score < COVERAGE_FLOOR or self.intents[intent_index].name in UNCOVERED:
                continue  # an action is never made likelier this way
            # What the intent's other examples add: the request's words its closest
            # example lacks but another of its examples has.
            vocab, own = self._vocab[intent_index], self._docs[closest[intent_index]][2]
            extra = sum(self.weight(f) ** 2 for f in feats if f in vocab and f not in own)
            best[intent_index] = (score + COVERAGE_SHARE * math.sqrt(extra / total), example)
        lexical_top = max(best.items(), key=lambda item: item[1][0], default=None)
        if meaning is None:
            meaning = lexical_top is None or lexical_top[1][0] < THRESHOLD
        closest_by_meaning = self.closest_by_meaning(text) if meaning else None
        if (
            closest_by_meaning is not None
            and lexical_top is not None
            and lexical_top[1][0] >= THRESHOLD
            and not _may_overrule(
                self.intents[lexical_top[0]].key, self.intents[closest_by_meaning[0]].key
            )
        ):
            closest_by_meaning = None
        if closest_by_meaning is not None:
            intent_index, cosine, example = closest_by_meaning
            score = meaning_score(cosine)
            by_words = best.get(intent_index, (0.0, ""))[0]
            if score > by_words:
                best[intent_index] = (score, example)
                if by_words < THRESHOLD:
                    # Recognised by meaning alone: its flags are meaning's, not its words'.
                    closest.pop(intent_index, None)
        ranked = sorted(best.items(), key=lambda item: -item[1][0])
        return [self._match(i, s, e, feats, closest.get(i)) for i, (s, e) in ranked]

    def _match(
        self, i: int, score: float, example: str, feats: set[str], closest: int | None
    ) -> Match:
        """What the flags say of a lexical match; one by meaning alone shares no word with
        its example, so it is anchored (no action is ever scored by meaning) but never
        beyond the status examples' words."""
        own = self._docs[closest][2] if closest is not None else None
        return Match(
            self.intents[i],
            round(score, 4),
            example,
            anchored=own is None or bool((feats & own) - self._plain),
            named=i not in self._naming or bool(feats & self._naming[i]),
            beyond_status=own is not None and bool((feats & own) - self._status),
        )

    def closest_by_meaning(self, text: str) -> tuple[int, float, str] | None:
        """The one intent meaning puts closest to `text`, clearly ahead of the next, when it
        is not an action: only it is raised. An action closest by meaning raises nothing
        (its own score stays its words'), so meaning never hides an action behind its
        policy topic; nor does meaning speak where the words already found an action
        ("取消" asks which order, not for the cancellation policy): whether a request or a
        question about it is meant is the rule reading's to say."""
        scores = self.by_meaning(text)
        if not scores:
            return None
        first, *rest = sorted(scores, key=lambda i: -scores[i][0])
        second = scores[rest[0]][0] if rest else -1.0
        if self.intents[first].name in UNCOVERED or scores[first][0] - second < MEANING_MARGIN:
            return None
        return first, *scores[first]

    def by_meaning(self, text: str) -> dict[int, tuple[float, str]]:
        """Each intent's closest example by meaning, from the first index that answers;
        empty with none (lexical only, said once per backend in the log)."""
        for index in self.meaning:
            model = index.embedder.model_id
            if self._clock() < self._resting.get(model, 0.0):
                continue
            try:
                return index.scores(text)
            except EmbeddingUnavailable as exc:
                self._resting[model] = self._clock() + MEANING_RETRY_S
                if model not in self._unavailable:
                    self._unavailable.add(model)
                    log.warning("recognition by meaning: %s unavailable (%s)", model, exc)
        return {}
