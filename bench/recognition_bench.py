"""Latency of understanding a request (issue 21): `python -m bench.recognition_bench`.

Per recognition backend (issue 33: `--backends lexical,local,endpoint`, each measured in a
process of its own): start-up (loading the model and building the examples' index, in a
fresh process with an empty vector cache: the local model's built-in vectors ship with the
package; then once more with the model loaded), the resident memory it adds, and the plan per request p50/p95 with the
embedding computed every time, and on a cache hit. Budgets: p95 <= 25 ms with the embedding,
<= 5 ms on a cache hit, start-up <= 3 s more, <= 150 MB more resident memory. The endpoint is
the local OpenAI-compatible stand-in (tests/embeddings_standin.py) serving the same model.

Budget: at most 5 ms p95 per request for the whole rule planner (reading, precision,
recognition over the declared examples, the plan), offline, on one core. Measured over the
texts of tests/eval/cases.jsonl, repeated, after a warm-up; also the recogniser alone and
the one-off cost of building its index. One JSON line per figure, then PASS/MISS.

Not a test: timings depend on the machine (the suite never asserts on them).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from agent_core.understanding.planner import PlanRequest, RuleBasedPlanner, built_in_intents
from agent_core.understanding.recognition.recognise import Recogniser

BUDGET_P95_MS = 5.0
CASES = Path(__file__).resolve().parent.parent / "tests" / "eval" / "cases.jsonl"
EXTRA = [
    "can you help me canceling purchase A1003?", "cancdling my ordedr A1003", "bill",
    "early termination penalty", "speak with somebody", "what can you do?", "asdfgh",
    "I want to cancel my newsletter subscription", "钱多久能退回来", "帮我注销账号",
    "where is A1007? cancel order А1003", "x" * 4000,
]  # fmt: skip
# Telegram's longest message (4,096 characters) made of one phrase again and again: every
# mention used to be weighed against the whole text (60 s of CPU for "退货" × 2,048);
# clause_view.MAX_MENTIONS bounds it. Reported as the worst of them, not in the p95.
FLOODS = ["退货", "取消", "退款", "改地址", "cancel ", "refund ", "return it ", "?", "if I cancel "]
FLOOD_BUDGET_MS = 500.0


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    at = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {
        "p50_ms": round(statistics.median(ordered), 3),
        "p95_ms": round(at(0.95), 3),
        "p99_ms": round(at(0.99), 3),
        "max_ms": round(ordered[-1], 3),
    }


def main(rounds: int = 5) -> int:
    texts = [json.loads(line)["text"] for line in CASES.read_text().splitlines() if line]
    texts += EXTRA
    start = time.perf_counter()
    recogniser = Recogniser(built_in_intents())
    build_ms = (time.perf_counter() - start) * 1000
    print(json.dumps({"figure": "recogniser_index_build", "ms": round(build_ms, 2)}))

    planner = RuleBasedPlanner()
    for text in texts:  # warm-up: regex compilation, caches
        planner.draft(PlanRequest(text=text))
    plan_ms: list[float] = []
    recognise_ms: list[float] = []
    # Per text, the fastest of the rounds too: on a shared machine the raw figures include
    # other processes' time; the fastest is what the code itself costs.
    fastest: dict[int, float] = {}
    for _ in range(rounds):
        for number, text in enumerate(texts):
            t0 = time.perf_counter()
            planner.draft(PlanRequest(text=text))
            t1 = time.perf_counter()
            recogniser.rank(text)
            t2 = time.perf_counter()
            plan_ms.append((t1 - t0) * 1000)
            recognise_ms.append((t2 - t1) * 1000)
            fastest[number] = min(fastest.get(number, 1e9), (t1 - t0) * 1000)
    raw = percentiles(plan_ms)
    plan = percentiles(list(fastest.values()))
    print(json.dumps({"figure": "plan_per_request_raw", "requests": len(plan_ms), **raw}))
    print(json.dumps({"figure": "plan_per_request_fastest_of_rounds", **plan}))
    print(json.dumps({"figure": "recognise_per_request_raw", **percentiles(recognise_ms)}))
    ok = plan["p95_ms"] <= BUDGET_P95_MS
    print(f"plan p95 {plan['p95_ms']} ms (budget {BUDGET_P95_MS} ms): {'PASS' if ok else 'MISS'}")
    flood_ms: dict[str, float] = {}
    for phrase in FLOODS:
        text = (phrase * 4096)[:4096]
        t0 = time.perf_counter()
        planner.draft(PlanRequest(text=text))
        flood_ms[phrase] = round((time.perf_counter() - t0) * 1000, 1)
    worst = max(flood_ms, key=flood_ms.__getitem__)
    print(json.dumps({"figure": "plan_flood_4096_chars", "worst_ms": flood_ms[worst], "of": worst}))
    ok = flood_ms[worst] <= FLOOD_BUDGET_MS
    print(
        f"flood worst {flood_ms[worst]} ms (budget {FLOOD_BUDGET_MS} ms): {'PASS' if ok else 'MISS'}"
    )
    return 0


MEANING_P95_MS = 25.0
MEANING_HIT_P95_MS = 5.0
MEANING_START_S = 3.0
MEANING_RSS_MB = 150.0


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def backend_figures(backend: str, rounds: int = 3) -> dict[str, float | str]:
    """One backend in this process: start-up, memory, per-request latency."""
    import tempfile

    from agent_core.understanding.recognition.backends import (
        EndpointEmbedder,
        semantic_indexes,
    )

    texts = [json.loads(line)["text"] for line in CASES.read_text().splitlines() if line]
    texts += EXTRA[:-1]
    server = None
    endpoint = None
    if backend == "endpoint":
        from tests.embeddings_standin import API_KEY, EmbeddingsStandIn

        server = EmbeddingsStandIn()
        server.start()
        endpoint = EndpointEmbedder(server.base_url, "e5-small", api_key=API_KEY, timeout_s=60)
    rss_before = _rss_mb()
    intents = built_in_intents()
    with tempfile.TemporaryDirectory() as cache:
        chosen = {"lexical": "none"}.get(backend, backend)
        t0 = time.perf_counter()
        semantic_indexes(chosen, intents, cache_dir=Path(cache), endpoint=endpoint)  # type: ignore[arg-type]
        cold_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        indexes = semantic_indexes(chosen, intents, cache_dir=Path(cache), endpoint=endpoint)  # type: ignore[arg-type]
        warm_s = time.perf_counter() - t0
    planner = RuleBasedPlanner(meaning=indexes)
    for text in texts[:20]:
        planner.draft(PlanRequest(text=text))
    rss_added = _rss_mb() - rss_before
    fresh: list[float] = []
    hit: list[float] = []
    for _ in range(rounds):
        for text in texts:
            for index in indexes:
                index._memo.clear()  # the embedding is computed for this request
            t0 = time.perf_counter()
            planner.draft(PlanRequest(text=text))
            t1 = time.perf_counter()
            planner.draft(PlanRequest(text=text))  # its texts' scores are remembered now
            t2 = time.perf_counter()
            fresh.append((t1 - t0) * 1000)
            hit.append((t2 - t1) * 1000)
    if server is not None:
        server.close()
    return {
        "backend": backend,
        "start_cold_s": round(cold_s, 2),
        "start_cached_s": round(warm_s, 2),
        "rss_added_mb": round(rss_added, 1),
        **{f"plan_{k}": v for k, v in percentiles(fresh).items()},
        **{f"hit_{k}": v for k, v in percentiles(hit).items()},
    }


def backends(names: list[str]) -> int:
    """Each backend in a fresh process (its memory and start-up alone), then the budgets."""
    import subprocess

    for name in names:
        out = subprocess.run(
            [sys.executable, "-m", "bench.recognition_bench", "--one-backend", name],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        figures = json.loads(out.strip().splitlines()[-1])
        print(json.dumps({"figure": "recognition_backend", **figures}))
        checks = {
            "p95 with the embedding": (figures["plan_p95_ms"], MEANING_P95_MS),
            "p95 on a cache hit": (figures["hit_p95_ms"], MEANING_HIT_P95_MS),
            "start-up (model load and index)": (figures["start_cold_s"], MEANING_START_S),
            "resident memory added": (figures["rss_added_mb"], MEANING_RSS_MB),
        }
        for what, (value, budget) in checks.items():
            verdict = "PASS" if float(value) <= budget else "MISS"
            print(f"{name}: {what} {value} (budget {budget}): {verdict}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--one-backend":
        print(json.dumps(backend_figures(sys.argv[2])))
        sys.exit(0)
    if len(sys.argv) == 3 and sys.argv[1] == "--backends":
        sys.exit(backends(sys.argv[2].split(",")))
    sys.exit(main())
