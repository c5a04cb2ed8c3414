"""A local OpenAI-compatible `/v1/embeddings` server for the endpoint backend's tests.

Real HTTP on its own thread (the backend's client is synchronous and runs off the event
loop, as in production). Every request is checked against OpenAI's published request type
(`openai.types.EmbeddingCreateParams`, the SDK's own definition of the API) and every answer
against `openai.types.CreateEmbeddingResponse` before it is sent, so a request or an
answer off the spec fails the test rather than passing on a string match. The vectors are
real: the local model's, so the endpoint backend can be scored like the others.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from openai.types import CreateEmbeddingResponse, EmbeddingCreateParams
from pydantic import TypeAdapter, ValidationError

from agent_core.understanding.recognition.backends import LocalUSE

REQUEST = TypeAdapter(EmbeddingCreateParams)
KNOWN_FIELDS = frozenset(EmbeddingCreateParams.__annotations__)
API_KEY = "sk-test-embeddings-0123456789"


@dataclass
class EmbeddingsStandIn:
    """`down`: answer 503; `hang`: hold every answer until `release` is set."""

    api_key: str = API_KEY
    down: bool = False
    hang: bool = False
    release: threading.Event = field(default_factory=threading.Event)
    requests: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    base_url: str = ""

    def __post_init__(self) -> None:
        self._model = LocalUSE()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                standin._answer(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> str:
        self._thread.start()
        return self.base_url

    def close(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        try:
            body = json.loads(handler.rfile.read(length))
        except ValueError:
            return self._send(handler, 400, _error("invalid_request_error", "not JSON"))
        self.requests.append(body)
        if handler.path != "/v1/embeddings":
            return self._send(handler, 404, _error("not_found", handler.path))
        if handler.headers.get("Authorization") != f"Bearer {self.api_key}":
            return self._send(handler, 401, _error("invalid_api_key", "Incorrect API key."))
        problem = _off_spec(body)
        if problem:
            self.problems.append(problem)
            return self._send(handler, 400, _error("invalid_request_error", problem))
        if self.hang:
            self.release.wait()
        if self.down:
            return self._send(handler, 503, _error("server_error", "overloaded"))
        texts = [body["input"]] if isinstance(body["input"], str) else list(body["input"])
        vectors = list(self._model.embed(texts, query=True))
        answer = {
            "object": "list",
            "model": body["model"],
            "data": [
                {"object": "embedding", "index": n, "embedding": [float(x) for x in v]}
                for n, v in enumerate(vectors)
            ],
            "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
        }
        CreateEmbeddingResponse.model_validate(answer)  # the answer keeps the spec too
        self._send(handler, 200, answer)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


def _off_spec(body: Any) -> str | None:
    """What makes `body` not an `EmbeddingCreateParams`, or None."""
    if not isinstance(body, dict):
        return "the body is not an object"
    unknown = set(body) - KNOWN_FIELDS
    if unknown:
        return f"unknown fields: {sorted(unknown)}"
    if "input" not in body or "model" not in body:
        return "input and model are required"
    try:
        REQUEST.validate_python(body, strict=False)
    except ValidationError as exc:
        return str(exc).splitlines()[0]
    if isinstance(body["input"], list) and not body["input"]:
        return "input must not be empty"
    return None


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}
