"""A tiny OpenAI-compatible chat-completions server around a local GGUF model on the CPU.

For `bench.model_planner` only: the model planner must be measured on its production path
(the `openai` SDK over HTTP to `STEPWISE_LLM_BASE_URL`), and the one CPU runtime that
installs here as a wheel (`gpt4all`, llama.cpp inside) has a Python API but no server.
`python -m bench.llm_server --model FILE.gguf --port N` listens on 127.0.0.1 only.

The runtime has no tool-call support, so tools are offered the way small models are
usually prompted: a compact list in the system message (name, arguments, description) and
the instruction to answer with one JSON object per call, `{"name": ..., "arguments":
{...}}`. Every such object in the reply becomes an OpenAI `tool_calls` entry; a reply with
none is plain `content` (which the planner treats as no plan, and falls back). One request
at a time, greedy decoding.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from aiohttp import web

SYSTEM = """\
Answer ONLY with tool calls, one JSON object per line, like:
{{"name": "get_order_status", "arguments": {{"order_id": "A1001"}}}}
No other text.

Tools:
{tools}

{instructions}"""


def tool_lines(tools: list[dict[str, Any]]) -> str:
    lines = []
    for tool in tools:
        fn = tool.get("function", {})
        params = fn.get("parameters", {}) or {}
        required = set(params.get("required") or [])
        args = ", ".join(
            f"{name}{'' if name in required else '?'}" for name in params.get("properties") or {}
        )
        lines.append(f"- {fn.get('name')}({args}): {fn.get('description', '')}")
    return "\n".join(lines)


# Worked examples, as earlier turns: a 135M model copies a shape far better than it follows
# a description of one. Generic (ids and wording appear in no eval case).
EXAMPLES = [
    ("where is my parcel Z9001?", [("get_order_status", {"order_id": "Z9001"})]),
    ("please cancel Z9002", [("get_order_status", {"order_id": "Z9002"}),
                             ("cancel_order", {"order_id": "Z9002"})]),
    ("what is your refund policy?", [("search_policy", {"query": "refund policy"})]),
    ("can I talk to a real person", [("hand_off", {"reason": "asks for a person"})]),
]  # fmt: skip
# The reply is started for the model, as a grammar would force it: the first call's name.
PREFIX = '{"name": "'


def chatml(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    system = [m.get("content") or "" for m in messages if m.get("role") == "system"]
    parts = [
        "<|im_start|>system\n"
        + SYSTEM.format(tools=tool_lines(tools), instructions="\n".join(system))
        + "<|im_end|>\n"
    ]
    for text, example in EXAMPLES:
        user = json.dumps({"customer_text": text, "language": "en", "last_order_id": None})
        reply = "\n".join(json.dumps({"name": n, "arguments": a}) for n, a in example)
        parts.append(
            f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n{reply}<|im_end|>\n"
        )
    for m in messages:
        role = m.get("role")
        if role == "system":
            continue
        content = m.get("content") or ""
        if role == "assistant" and m.get("tool_calls"):
            content = "\n".join(
                json.dumps({"name": c["function"]["name"], "arguments": c["function"]["arguments"]})
                for c in m["tool_calls"]
            )
        if role == "tool":
            role, content = "user", f"tool result: {content}"
        parts.append(f"<|im_start|>{role}\n{content}<|im_end|>\n")
    parts.append("<|im_start|>assistant\n" + PREFIX)
    return "".join(parts)


def parse_calls(text: str) -> list[tuple[str, str]]:
    """Every JSON object in the reply that names a tool: (name, arguments as JSON)."""
    decoder = json.JSONDecoder()
    calls = []
    at = text.find("{")
    while at != -1:
        try:
            obj, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            at = text.find("{", at + 1)
            continue
        if isinstance(obj, dict) and isinstance(obj.get("name"), str):
            args = obj.get("arguments", {})
            calls.append((obj["name"], args if isinstance(args, str) else json.dumps(args)))
        at = text.find("{", end)
    return calls


class Server:
    def __init__(self, model_path: str, threads: int, max_tokens: int) -> None:
        from pathlib import Path

        from gpt4all import GPT4All

        path = Path(model_path)
        self.name = path.stem
        self.model = GPT4All(
            path.name,
            model_path=str(path.parent),
            allow_download=False,
            device="cpu",
            n_threads=threads,
            n_ctx=4096,
            verbose=False,
        )
        self.max_tokens = max_tokens
        self.lock = asyncio.Lock()
        self.count = 0

    def generate(self, prompt: str) -> str:
        """Greedy, the ChatML markers read as special tokens, until <|im_end|>. (The
        high-level `GPT4All.generate` would read them as text, and prefill 8 tokens at a
        time.)"""
        pieces: list[str] = []

        def more(_token: int, piece: str) -> bool:
            pieces.append(piece)
            return "<|im_end|>" not in "".join(pieces[-4:])

        self.model.model.prompt_model(
            prompt,
            "%1",
            more,
            n_predict=self.max_tokens,
            temp=0.0,
            top_k=1,
            n_batch=256,
            repeat_penalty=1.0,
            reset_context=True,
            special=True,
        )
        return PREFIX + "".join(pieces).split("<|im_end|>")[0]

    async def complete(self, request: web.Request) -> web.Response:
        body = await request.json()
        prompt = chatml(body.get("messages") or [], body.get("tools") or [])
        async with self.lock:
            started = time.perf_counter()
            text = await asyncio.to_thread(self.generate, prompt)
            elapsed = time.perf_counter() - started
        self.count += 1
        calls = parse_calls(text)
        message: dict[str, Any] = {"role": "assistant", "content": None if calls else text}
        if calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{self.count}_{n}",
                    "type": "function",
                    "function": {"name": name, "arguments": args},
                }
                for n, (name, args) in enumerate(calls)
            ]
        return web.json_response(
            {
                "id": f"chatcmpl-{self.count}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", self.name),
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if calls else "stop",
                    }
                ],
                "usage": {"generation_seconds": round(elapsed, 3)},
                "raw_text": text,
            }
        )

    async def models(self, _: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": self.name, "object": "model"}]})


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.llm_server")
    p.add_argument("--model", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--max-tokens", type=int, default=160)
    args = p.parse_args()
    server = Server(args.model, args.threads, args.max_tokens)
    app = web.Application()
    app.router.add_post("/v1/chat/completions", server.complete)
    app.router.add_get("/v1/models", server.models)
    web.run_app(app, host="127.0.0.1", port=args.port, print=None)


if __name__ == "__main__":
    main()
