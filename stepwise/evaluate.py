"""`stepwise eval [FILE] [--planner rule|model] [--json]`: score a planner on labelled cases.

Prints the accuracy per category, every miss with what was expected and what the planner
proposed, and the wrong-action count (plans with a high-risk step the customer did not ask
for), which must be 0. Exit code 1 when there is any wrong action, 2 for a bad file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pydantic import ValidationError

from agent_core.evaluation import evaluate, load_cases
from agent_core.planner import Planner, RuleBasedPlanner
from stepwise.runtime import build_planner
from stepwise.settings import Settings

DEFAULT_CASES = Path(__file__).resolve().parent.parent / "tests" / "eval" / "cases.jsonl"
EXIT_OK, EXIT_WRONG_ACTION, EXIT_USAGE = 0, 1, 2


class EvalError(Exception):
    """A case file that cannot be read; one line for stderr."""


def read_cases_file(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise EvalError(f"cannot read {path}: {exc.strerror or exc}") from exc


async def run_eval(settings: Settings, args: argparse.Namespace) -> int:
    """`stepwise eval` with the planner the arguments name."""
    if args.planner == "model":
        if not (settings.llm_base_url and settings.llm_model):
            raise EvalError("--planner model needs STEPWISE_LLM_BASE_URL and STEPWISE_LLM_MODEL")
        planner = build_planner(settings.model_copy(update={"planner": "model"}))
    else:
        planner = RuleBasedPlanner(order_id_pattern=settings.order_pattern)
    return await cmd_eval(settings, args, planner)


async def cmd_eval(settings: Settings, args: argparse.Namespace, planner: Planner) -> int:
    path = Path(args.file) if args.file else DEFAULT_CASES
    try:
        cases = load_cases(read_cases_file(path))
    except (ValidationError, json.JSONDecodeError) as exc:
        raise EvalError(f"{path}: not a valid case file ({str(exc).splitlines()[0]})") from exc
    report = await evaluate(planner, cases, name=args.planner)
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False))
    else:
        print("\n".join(report.lines()))
    return EXIT_WRONG_ACTION if report.wrong_action_cases else EXIT_OK
