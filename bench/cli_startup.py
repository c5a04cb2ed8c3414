"""`python -m bench.cli_startup`: how long `stepwise --help` takes to start (issue 23 #12).

Runs it a few times in fresh interpreters and prints one JSON line per figure (the best
and the median wall time) and the goal (≤ 0.5 s on an idle machine), as the other bench
sections do. A measurement, not a test: the machine's load decides the figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

GOAL_S = 0.5


def measure(runs: int, argv: list[str]) -> list[float]:
    took = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "stepwise", *argv], capture_output=True, check=False)
        took.append(time.perf_counter() - started)
    return took


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cli_startup")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    for argv in (["--help"], ["ask", "--help"]):
        took = measure(args.runs, argv)
        label = "stepwise " + " ".join(argv)
        for metric, value in (("best", min(took)), ("median", statistics.median(took))):
            line = {"section": "cli_startup", "command": label, "metric": metric}
            print(json.dumps(line | {"value": round(value, 3), "unit": "s"}))
        result = "PASS" if statistics.median(took) <= GOAL_S else "MISS"
        print(
            json.dumps(
                {
                    "section": "cli_startup",
                    "command": label,
                    "goal": f"<= {GOAL_S} s",
                    "result": result,
                }
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
