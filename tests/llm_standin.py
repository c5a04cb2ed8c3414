"""A local, scripted OpenAI-compatible chat-completions server for the model planner's tests.

Real HTTP (aiohttp), like the Bot API stand-in: the planner talks to it through the
official `openai` SDK exactly as it would to OpenAI, DeepSeek, vLLM or Ollama, so what is
tested is the wire, not a mocked client object. A test scripts the replies in order (tool
calls, an HTTP error, or a reply that never comes, for timeouts) and reads back every
request the server received.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.local_http import serve_app

API_KEY = "sk-test-planner-0123456789"


@dataclass(frozen=True)
class Reply:
    """One scripted answer: tool calls (name, arguments), an HTTP status, or silence."""

    calls: tuple[tuple[str, dict[str, Any] | str], ...] = ()
    status: int = 200
    content: str | None = None
    hang: bool = False  # never answer (the client's timeout fires first)


def calls(*items: tuple[str, dict[str, Any] | str]) -> Reply:
    return Reply(calls=tuple(items))


@dataclass
class LLMStandIn:
    api_key: str = API_KEY
    replies: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)
    base_url: str = ""
    _runner: web.AppRunner | None = None
    _closed: asyncio.Event = field(default_factory=asyncio.Event)

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._complete)
        self._runner, url = await serve_app(app)
        self.base_url = f"{url}/v1"
        return self.base_url

    async def close(self) -> None:
        self._closed.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _complete(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        self.authorizations.append(request.headers.get("Authorization", ""))
        if request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return _error(401, "invalid_api_key", "Incorrect API key provided.")
        if not self.replies:
            return _error(500, "server_error", "the script has no more replies")
        reply = self.replies.pop(0)
        if reply.hang:
            await self._closed.wait()
            return _error(503, "server_error", "closed")
        if reply.status != 200:
            return _error(reply.status, "server_error", f"scripted {reply.status}")
        tool_calls = [
            {
                "id": f"call_{len(self.requests)}_{n}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for n, (name, args) in enumerate(reply.calls)
        ]
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        return web.json_response(
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "scripted"),
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if tool_calls else "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )


def _error(status: int, code: str, message: str) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": code, "param": None, "code": code}},
        status=status,
    )
