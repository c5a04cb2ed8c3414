"""The ten hand-made mutants of issue 16: apply each, run the regression tests, restore.

Usage: python tests/mutation/hand_mutants.py [name ...]   (from the repository root)

mutmut cannot make some of these (a dropped table entry, a changed SQL literal, a catalog
template), so they are kept here as text edits at the place the code has them now. Each
mutant is one or more exact edits; every edit's text must occur exactly once in its file,
otherwise the script stops with exit 1 before touching anything: a mutant that cannot be
applied is a list to update, never a silent pass. Files are restored with `git checkout`;
a file with uncommitted changes is refused so no work is lost.
Prints KILLED or SURVIVED per mutant and exits 1 if any survived.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import NamedTuple

PYTHON = sys.executable
TESTS = "tests/test_regressions_issue16.py"


class Edit(NamedTuple):
    path: str
    old: str
    new: str


class Mutant(NamedTuple):
    name: str
    regression: str  # the wording of what a customer or staff member would see
    edits: tuple[Edit, ...]


_ALREADY_CANCELLED_RULE = """\
        rule(
            "already_cancelled",
            after=STATUS,
            field="status",
            values={"cancelled"},
            skip_tag=StepTag.CANCEL,
            reason=Texts(
                zh="订单 {order_id} 已经是取消状态，无需再次取消。",
                en="Order {order_id} is already cancelled; nothing more to do.",
            ),
        ),
"""
_ETA_ONLY_WHEN_SHIPPING = 'when={"status": ("shipping",)},'
_ETA_UNLESS_PENDING = 'when={"status": ("shipping", "delivered", "cancelled")},'
_ABSENT_READS_AS_ABSENT = "if raw is None or isinstance(raw, dict | list):"
_ABSENT_READS_AS_NONE = "if isinstance(raw, dict | list):"

# See the numbered list in issue 16; the letters are variants of the same regression.
MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "1a",
        "after a decline the done status step is turned into 'not done'",
        (
            Edit(
                "agent_core/execution/transitions.py",
                "        if later.status is StepStatus.PENDING:\n"
                "            later.status = StepStatus.CANCELLED",
                "        if later.status is not StepStatus.PENDING:\n"
                "            later.status = StepStatus.CANCELLED",
            ),
        ),
    ),
    Mutant(
        "1b",
        "after a decline every step, done or not, is cancelled",
        (
            Edit(
                "agent_core/execution/transitions.py",
                "        if later.status is StepStatus.PENDING:\n"
                "            later.status = StepStatus.CANCELLED",
                "        if True:\n            later.status = StepStatus.CANCELLED",
            ),
        ),
    ),
    Mutant(
        "2",
        "the already_cancelled rule dropped: Confirm/Cancel to cancel a cancelled order",
        (Edit("agent_core/catalog/builtin.py", _ALREADY_CANCELLED_RULE, ""),),
    ),
    Mutant(
        "3a",
        "a missing eta is quoted: 'Order A1001 is on its way, expected None.'",
        (Edit("agent_core/answers/render.py", _ABSENT_READS_AS_ABSENT, _ABSENT_READS_AS_NONE),),
    ),
    Mutant(
        "3b",
        "the eta is quoted for any status but pending: 'is delivered, expected 2026-11-28.'",
        (Edit("agent_core/catalog/builtin.py", _ETA_ONLY_WHEN_SHIPPING, _ETA_UNLESS_PENDING),),
    ),
    Mutant(
        "3c",
        "the issue's exact text: 'Order A1001 is delivered, expected None.'",
        (
            Edit("agent_core/catalog/builtin.py", _ETA_ONLY_WHEN_SHIPPING, _ETA_UNLESS_PENDING),
            Edit("agent_core/answers/render.py", _ABSENT_READS_AS_ABSENT, _ABSENT_READS_AS_NONE),
        ),
    ),
    Mutant(
        "4",
        "a retried lookup answers only ' (succeeded after 1 retry)' (`+=` → `=`)",
        (Edit("agent_core/answers/compose.py", "            text += (", "            text = ("),),
    ),
    Mutant(
        "5",
        "the refusal kind ignored: 'tell me your order number' → the generic help",
        (
            Edit(
                "agent_core/answers/compose.py",
                "refusal = known[lang] if known is not None else can_help(lang, catalog)",
                "refusal = can_help(lang, catalog)",
            ),
        ),
    ),
    Mutant(
        "6",
        "an internal error on an approved cancel told as 'can no longer be cancelled'",
        (
            Edit(
                "agent_core/answers/compose.py",
                "    if error is ErrorType.INVALID_ARGUMENTS:\n",
                "    if error is ErrorType.INVALID_ARGUMENTS or (spec is not None and spec.refusals):\n",
            ),
        ),
    ),
    Mutant(
        "7",
        "while paused, a later step reported 'not done, because an earlier step ...'",
        (
            Edit(
                "agent_core/answers/compose.py",
                "if status in (StepStatus.PENDING, StepStatus.RUNNING) and run.is_terminal:",
                "if status in (StepStatus.PENDING, StepStatus.RUNNING) or run.is_terminal:",
            ),
        ),
    ),
    Mutant(
        "8",
        "the not-found / not-yours hints replaced by 'contact a human agent'",
        (
            Edit(
                "agent_core/answers/compose.py",
                'return NEXT_STEP_AFTER_FAILURE.get(run.stop_reason or "", DEFAULT_NEXT_STEP)[lang]',
                "return DEFAULT_NEXT_STEP[lang]",
            ),
        ),
    ),
    Mutant(
        "9",
        "every progress line says 'done after 0 retries'",
        (
            Edit(
                "agent_core/answers/compose.py",
                '            if step.retry_count\n            else ("完成"',
                '            if step.retry_count >= 0\n            else ("完成"',
            ),
        ),
    ),
    Mutant(
        "10a",
        "run_finished no longer saves steps changed without their own event",
        (
            Edit(
                "storage/journal.py",
                "        if event.step_id is None:\n            whole = True",
                "        if event.step_id is None:\n            whole = False",
            ),
        ),
    ),
    Mutant(
        "10b",
        "a step's error is never saved",
        (
            Edit(
                "storage/tables.py",
                '"error_type": error.type.value if error else None,\n        "error_message"',
                '"error_type": None,\n        "error_message"',
            ),
        ),
    ),
    Mutant(
        "10c",
        "a decline logged as 'approved' in the staff timeline",
        (
            Edit(
                "storage/runs/sqlite.py",
                '"approved" if approved else "declined",',
                '"approved",',
            ),
        ),
    ),
)


def mutated_sources(mutant: Mutant) -> dict[str, str]:
    """Each file the mutant touches, with its edits applied; exit 1 if an edit's text is
    not in its file exactly once (the code moved: update MUTANTS)."""
    sources: dict[str, str] = {}
    for edit in mutant.edits:
        if edit.path not in sources:
            with open(edit.path, encoding="utf-8") as f:
                sources[edit.path] = f.read()
        found = sources[edit.path].count(edit.old)
        if found != 1:
            raise SystemExit(
                f"mutant {mutant.name}: the text to mutate occurs {found} times in "
                f"{edit.path} (needs exactly 1); update MUTANTS:\n{edit.old}"
            )
        sources[edit.path] = sources[edit.path].replace(edit.old, edit.new)
    return sources


def run_mutant(mutant: Mutant, sources: dict[str, str]) -> bool:
    """Whether the regression tests fail (the mutant is killed) with `sources` in place."""
    try:
        for path, text in sources.items():
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        result = subprocess.run(
            [PYTHON, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", TESTS],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYTHONPATH": os.getcwd()},
        )
    finally:
        subprocess.run(["git", "checkout", "--", *sources], check=True)
    return result.returncode != 0


def main(only: list[str]) -> int:
    unknown = set(only) - {m.name for m in MUTANTS}
    if unknown:
        raise SystemExit(f"no such mutant: {', '.join(sorted(unknown))}")
    selected = [m for m in MUTANTS if not only or m.name in only]
    paths = sorted({e.path for m in selected for e in m.edits})
    if subprocess.run(["git", "diff", "--quiet", "--", *paths], check=False).returncode:
        raise SystemExit(f"uncommitted changes in {' '.join(paths)}; commit or stash them first")
    # Every mutant must apply before any is run: a stale one stops the whole check.
    planned = [(m, mutated_sources(m)) for m in selected]
    survived = 0
    for mutant, sources in planned:
        killed = run_mutant(mutant, sources)
        survived += not killed
        files = " + ".join(sorted(sources))
        print(
            f"{mutant.name:>4} {'KILLED' if killed else 'SURVIVED':<8} {files}  ({mutant.regression})"
        )
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
