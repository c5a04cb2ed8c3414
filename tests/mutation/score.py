"""Print the mutation score per module from mutmut's results in mutants/.

Usage: python tests/mutation/score.py   (from the repository root, after `mutmut run`)

Score = killed / (mutants - equivalent), where killed includes timeouts and mutants the
type checker rejects, and equivalents come from tests/mutation/equivalent.txt. Mutants no
test covers count as survivors: a line nobody tests is exactly what the score should show.
Exits 1 when a module is below its target (issue 16), so a run can gate on it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EQUIVALENT = Path(__file__).with_name("equivalent.txt")

# Module → the share of mutants that must be killed.
TARGETS: dict[str, float] = {
    "agent_core/execution/policy.py": 0.90,
    "agent_core/execution/rules.py": 0.90,
    "agent_core/execution/executor.py": 0.90,
    "agent_core/execution/transitions.py": 0.90,  # the executor's state changes (issue 10 split)
    "agent_core/answers/compose.py": 0.90,
    "agent_core/understanding/planner.py": 0.85,
    "agent_core/understanding/understand.py": 0.85,  # the planner's understanding (issue 13 split)
    "agent_core/understanding/reading.py": 0.85,  # the planner's text normalising and clauses
    "agent_core/understanding/clause_view.py": 0.85,  # the planner's reading of one clause
    "agent_core/understanding/clarifying.py": 0.85,  # the planner's questions back
    "agent_core/understanding/lexicon.py": 0.85,  # the planner's keyword tables (issue 10 split)
    "storage/runs/sqlite.py": 0.90,
    "storage/tables.py": 0.90,  # storage/runs/sqlite.py's row mapping (issue 10 split)
    "storage/journal.py": 0.90,  # the transitions as SQL (issue 15 split, both backends)
}
# "The planner" of issue 16 is now these modules together; its target applies to the sum.
GROUPS: dict[str, tuple[tuple[str, ...], float]] = {
    "planner (all modules)": (
        (
            "agent_core/understanding/planner.py",
            "agent_core/understanding/understand.py",
            "agent_core/understanding/reading.py",
            "agent_core/understanding/clause_view.py",
            "agent_core/understanding/clarifying.py",
            "agent_core/understanding/lexicon.py",
        ),
        0.85,
    ),
}
KILLED = {1, 3, 24, -24, 36, 37, 152, 255}  # mutmut exit codes: killed, timeout, type check
NOT_RUN = {None, 2, 34}  # not checked, interrupted, skipped


def equivalents(path: Path = EQUIVALENT) -> set[str]:
    names = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        name = line.split("#", 1)[0].strip()
        if name:
            names.add(name)
    return names


def score(module: str, excluded: set[str]) -> tuple[int, int, int, int, list[str]]:
    """(killed, counted, equivalent, not run, survivors) for one module."""
    meta = ROOT / "mutants" / f"{module}.meta"
    codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
    killed = counted = equivalent = not_run = 0
    survivors = []
    for name, code in sorted(codes.items()):
        if name in excluded:
            equivalent += 1
        elif code in NOT_RUN:
            not_run += 1
        else:
            counted += 1
            if code in KILLED:
                killed += 1
            else:
                survivors.append(name)
    return killed, counted, equivalent, not_run, survivors


def main(argv: list[str]) -> int:
    excluded = equivalents()
    below = 0
    print(
        f"{'module':<28} {'killed':>7} {'of':>5} {'score':>7} {'target':>7} {'equiv':>6} {'not run':>8}"
    )
    totals: dict[str, tuple[int, int, int, int]] = {}
    for module, target in TARGETS.items():
        if not (ROOT / "mutants" / f"{module}.meta").exists():
            print(f"{module:<28} (no results: run mutmut first)")
            below += 1
            continue
        killed, counted, equivalent, not_run, survivors = score(module, excluded)
        totals[module] = (killed, counted, equivalent, not_run)
        if not counted and not not_run:
            # Every mutant is in equivalent.txt: nothing a test could kill, so the module
            # has no score of its own (and does not fail the run).
            print(f"{module:<28} (n/a: all {equivalent} mutants excluded, none testable)")
            continue
        if not counted:
            print(f"{module:<28} (no mutant checked yet: {not_run} not run)")
            below += 1
            continue
        below += _line(module, killed, counted, equivalent, not_run, target)
        if "-v" in argv:
            for name in survivors:
                print(f"    survived: {name}")
    for group, (modules, target) in GROUPS.items():
        if not all(m in totals for m in modules):
            continue
        summed = [sum(totals[m][i] for m in modules) for i in range(4)]
        if summed[1]:
            below += _line(group, *summed, target)
    return 1 if below else 0


def _line(
    name: str, killed: int, counted: int, equivalent: int, not_run: int, target: float
) -> bool:
    """Print one row; True when it is below its target."""
    share = killed / counted
    mark = "" if share >= target else "  < target"
    print(
        f"{name:<28} {killed:>7} {counted:>5} {share:>7.1%} {target:>7.0%}"
        f" {equivalent:>6} {not_run:>8}{mark}"
    )
    return share < target


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
