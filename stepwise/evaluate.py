"""`stepwise eval [FILE ...] [--planner rule|model] [--strict] [--json]`: score a planner on
labelled cases.

Each file is a split (tests/eval/cases.jsonl v1, dev.jsonl and heldout.jsonl v2; without a
FILE, every one of those present). Per split it prints the accuracy overall, per intent
(category), per register and per language (v2), every miss with what was expected and what
the planner proposed, and the wrong-action count (plans with a high-risk step the customer
did not ask for), which must be 0; then one summary line per split. The held-out split is
sealed: its misses are named by id and register only, so that whoever tunes recognition never
reads its texts (`--unseal` shows them, for the split's author checking labels). `--json`: one file gives
its report object (as before), several give {"planner", "wrong_actions", "splits": [...]}.
Exit code 1 when there is a wrong action in any split other than those listed, with why, in
tests/eval/known_wrong_actions.json; 2 for a bad file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pydantic import ValidationError

from agent_core.understanding.evaluation import Report, evaluate, load_cases
from agent_core.understanding.planner import Planner, RuleBasedPlanner, built_in_intents
from agent_core.understanding.recognition.embedding import SemanticIndex
from stepwise.runtime import build_planner, meaning_indexes
from stepwise.settings import Settings

EVAL_DIR = Path(__file__).resolve().parent.parent / "tests" / "eval"
SPLITS = ("cases.jsonl", "dev.jsonl", "heldout.jsonl", "blind.jsonl")
DEFAULT_CASES = EVAL_DIR / "cases.jsonl"
EXIT_OK, EXIT_WRONG_ACTION, EXIT_USAGE = 0, 1, 2


KNOWN_WRONG = EVAL_DIR / "known_wrong_actions.json"


def known_wrong_actions() -> dict[str, list[str]]:
    """Per split, the ids of the wrong actions listed as known debt (with why, in the file)."""
    try:
        data = json.loads(KNOWN_WRONG.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {split: sorted(ids) for split, ids in data.items() if isinstance(ids, dict)}


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
        planner = RuleBasedPlanner(
            order_id_pattern=settings.order_pattern,
            meaning=meaning_for(settings, getattr(args, "backend", None)),
        )
    return await cmd_eval(settings, args, planner)


def meaning_for(settings: Settings, backend: str | None) -> list[SemanticIndex]:
    """`--backend lexical|local|endpoint` (default: STEPWISE_EMBEDDINGS, as the bot)."""
    chosen = {"lexical": "none"}.get(backend or "", backend) or settings.embeddings
    if chosen == "endpoint" and not (settings.embeddings_url and settings.embeddings_model):
        raise EvalError(
            "--backend endpoint needs STEPWISE_EMBEDDINGS_URL and STEPWISE_EMBEDDINGS_MODEL"
        )
    return meaning_indexes(settings.model_copy(update={"embeddings": chosen}), built_in_intents())


def _name(args: argparse.Namespace) -> str:
    """The planner, with the recognition backend it was scored with ("rule/local")."""
    backend = getattr(args, "backend", None)
    return f"{args.planner}/{backend}" if backend else str(args.planner)


def default_files() -> list[Path]:
    """The splits present in tests/eval/, in their fixed order."""
    return [EVAL_DIR / name for name in SPLITS if (EVAL_DIR / name).exists()]


async def cmd_eval(settings: Settings, args: argparse.Namespace, planner: Planner) -> int:
    files = args.file if isinstance(args.file, list) else [args.file] if args.file else []
    paths = [Path(f) for f in files] or default_files()
    reports: list[Report] = []
    for path in paths:
        try:
            cases = load_cases(read_cases_file(path))
        except (ValidationError, json.JSONDecodeError) as exc:
            first = str(exc).splitlines()[0]
            raise EvalError(f"{path}: not a valid case file ({first})") from exc
        strict = bool(getattr(args, "strict", False))
        unseal = bool(getattr(args, "unseal", False))
        reports.append(
            await evaluate(
                planner,
                cases,
                name=_name(args),
                split=path.name,
                strict=strict,
                sealed=False if unseal else None,
            )
        )
    known = known_wrong_actions()
    unknown = [
        miss.case.id
        for r in reports
        for miss in r.misses
        if miss.wrong and miss.case.id not in known.get(r.split, [])
    ]
    wrong = sum(r.wrong_action_cases for r in reports)
    if args.json:
        if len(reports) == 1:
            print(json.dumps(reports[0].to_json(), ensure_ascii=False))
        else:
            body = {
                "planner": _name(args),
                "wrong_actions": wrong,
                "splits": [r.to_json() for r in reports],
            }
            print(json.dumps(body, ensure_ascii=False))
    else:
        for n, report in enumerate(reports):
            if n:
                print("\n" + "=" * 72 + "\n")
            print("\n".join(report.lines()))
        if len(reports) > 1:
            print("\n" + "=" * 72 + "\n")
            print("splits:")
            for r in reports:
                print(
                    f"  {r.split:<16} {r.correct:>5}/{r.total:<5} {100 * r.accuracy:5.1f} %"
                    f"   wrong actions: {r.wrong_action_cases}"
                )
        listed = sorted(
            {i for ids in known.values() for i in ids}
            & {m.case.id for r in reports for m in r.misses if m.wrong}
        )
        if listed:
            print(f"known wrong actions (tests/eval/known_wrong_actions.json): {', '.join(listed)}")
    return EXIT_WRONG_ACTION if unknown else EXIT_OK
