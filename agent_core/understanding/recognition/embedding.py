"""Recognition by meaning: the declared examples and a request compared as sentence
embeddings (issue 33).

The lexical scorer (`recognise`) knows the words of the examples; it cannot know that "a
formal grievance" is a complaint or that someone "still waiting for" money asks where it
is. A multilingual sentence-embedding model places texts of the same meaning close
together, whatever their words or language, so the examples carry to writers we have never
seen. This module is the featuriser: an `Embedder` turns texts into unit vectors; a
`SemanticIndex` holds the examples' vectors and gives each intent its best example's
cosine for a request. Which model computes the vectors is a backend's business
(`agent_core.understanding.recognition.backends`); the fusion of both scores is the
recogniser's (`recognise.Recogniser.rank`).

The examples' vectors are computed once and kept on disk (`VectorCache`), keyed by the
model and each example's own text: a changed intents file recomputes only its new
examples, and a restart none.

An embedding never decides an action on its own: the recogniser keeps an action's score
lexical (see `recognise.UNCOVERED`), and the precision layer stays the only road to one.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agent_core.understanding.recognition.intents import IntentDef

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Matrix = npt.NDArray[np.float32]
else:
    Matrix = Any

log = logging.getLogger(__name__)


class EmbeddingUnavailable(RuntimeError):
    """The backend could not embed (an endpoint down, slow or answering off the spec)."""


class Embedder(Protocol):
    """Turns texts into L2-normalised vectors of one model.

    `model_id` names the model and its version: vectors of different ids are never
    compared, and the cache keeps them apart. `query` says whether the texts are requests
    (True) or the examples they are compared with (False), for models that embed the two
    differently (E5's "query: " / "passage: ").
    """

    @property
    def model_id(self) -> str: ...

    def embed(self, texts: Sequence[str], *, query: bool) -> Matrix: ...


def _key(model_id: str, text: str) -> str:
    return hashlib.sha256(f"{model_id}\0{text}".encode()).hexdigest()[:32]


class VectorCache:
    """The examples' vectors on disk, one file per model (`<dir>/<model>.npz`).

    Each row is keyed by a hash of the model id and the example's text, so an example
    added, removed or edited in a shop's intents file costs only its own vector. A cache
    that cannot be read or written is only slower, never wrong: the vectors are computed
    again and the problem is logged once.
    """

    def __init__(self, directory: Path | None, seed: Path | None = None) -> None:
        """`seed`: a read-only file of the same form shipped with the package (the built-in
        examples under the local model), consulted first."""
        self.directory = directory
        self.seed = seed

    def _path(self, model_id: str) -> Path | None:
        if self.directory is None:
            return None
        slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in model_id)
        return self.directory / f"{slug}.npz"

    def vectors(self, embedder: Embedder, texts: Sequence[str]) -> Matrix:
        """The vectors of `texts` (examples) in order, from the cache where it has them."""
        import numpy as np

        keys = [_key(embedder.model_id, t) for t in texts]
        path = self._path(embedder.model_id)
        known: dict[str, Any] = {}
        for source in (self.seed, path):
            if source is not None and source.exists():
                known |= _read(source)
        missing = sorted({t for t, k in zip(texts, keys, strict=True) if k not in known})
        if missing:
            fresh = embedder.embed(missing, query=False)
            for text, vector in zip(missing, fresh, strict=True):
                known[_key(embedder.model_id, text)] = vector
            if path is not None:
                self._write(path, keys, known)
        return np.stack([known[k] for k in keys]).astype(np.float32)

    @staticmethod
    def _write(path: Path, keys: Sequence[str], known: dict[str, Any]) -> None:
        """Keep exactly the current examples (an edited intents file leaves no dead rows)."""
        try:
            write_vectors(path, {k: known[k] for k in dict.fromkeys(keys)})
        except OSError as exc:
            log.warning("embedding cache %s not written (%s): it is only slower", path, exc)


def _read(path: Path) -> dict[str, Any]:
    import numpy as np

    try:
        with np.load(path) as stored:
            return dict(zip(stored["keys"].tolist(), stored["vectors"], strict=True))
    except (OSError, ValueError, KeyError) as exc:
        log.warning("embedding cache %s unreadable (%s): computing again", path, exc)
        return {}


def write_vectors(path: Path, rows: dict[str, Any]) -> None:
    """Written to a temporary file and renamed, so a reader never sees half a file."""
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.stem}.{os.getpid()}.tmp.npz")
    np.savez(temporary, keys=np.array(list(rows)), vectors=np.stack(list(rows.values())))
    temporary.replace(path)


_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


class SemanticIndex:
    """Every example of the intents as a vector, and a request's closest example per intent.

    Every intent is in it, the actions too: the recogniser needs to know when meaning puts
    an action first (it then raises nothing), though it never raises one.
    """

    def __init__(
        self,
        intents: Sequence[IntentDef],
        embedder: Embedder,
        cache: VectorCache | None = None,
        *,
        blocking: bool = False,
    ) -> None:
        self.embedder = embedder
        # Whether embedding waits on the network (an endpoint): the planner then drafts
        # off the event loop.
        self.blocking = blocking
        self._owners: list[int] = []
        self._examples: list[str] = []
        for index, intent in enumerate(intents):
            for text in dict.fromkeys([*intent.examples.en, *intent.examples.zh]):
                self._owners.append(index)
                self._examples.append(text)
        self._matrix = (cache or VectorCache(None)).vectors(embedder, self._examples)
        import numpy as np

        # Each example's language: the other language's cosines are lifted (see `scores`).
        self._chinese = np.array([bool(_HAN.search(t)) for t in self._examples], dtype=bool)
        self._memo: dict[str, dict[int, tuple[float, str]]] = {}

    def export(self, path: Path) -> None:
        """Write the examples' vectors as a cache file (the package's shipped seed)."""
        write_vectors(
            path,
            {
                _key(self.embedder.model_id, text): vector
                for text, vector in zip(self._examples, self._matrix, strict=True)
            },
        )

    def scores(self, text: str) -> dict[int, tuple[float, str]]:
        """The cosine (lifted across languages) of `text` with each intent's closest example, and that example.

        Raises `EmbeddingUnavailable` when the backend cannot embed now. A planner asks
        about the same texts more than once (the message, then its clauses), so the last
        few hundred answers are kept.
        """
        found = self._memo.get(text)
        if found is not None:
            return found
        vector = self.embedder.embed([text], query=True)[0]
        cosines = self._matrix @ vector
        # A model puts any two texts of one language closer than two of different ones: a
        # Chinese request is nearer every Chinese example than the English example that
        # means what it asks. The examples of the other language are lifted by that gap
        # (the difference of the two languages' mean cosines), so an intent declared in
        # English only is found in Chinese too, and same-language cosines stay as they are.
        groups = [g for g in (self._chinese, ~self._chinese) if g.any()]
        means = [float(cosines[g].mean()) for g in groups]
        for group, mean in zip(groups, means, strict=True):
            cosines[group] += max(means) - mean
        best: dict[int, tuple[float, str]] = {}
        for row, owner in enumerate(self._owners):
            score = float(cosines[row])
            if score > best.get(owner, (-2.0, ""))[0]:
                best[owner] = (score, self._examples[row])
        if len(self._memo) >= 512:
            self._memo.clear()
        self._memo[text] = best
        return best
