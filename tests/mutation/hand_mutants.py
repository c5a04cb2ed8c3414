"""The ten hand-made mutants of issue 16: apply each, run the regression tests, restore.

Usage: python tests/mutation/hand_mutants.py [name ...]   (from the repository root)

mutmut cannot make some of these (a dropped table entry, a changed SQL literal), so they
are kept here as text edits. Each mutant edits a source file in place and restores it with
`git checkout`; a file with uncommitted changes is refused so no work is lost.
Prints KILLED or SURVIVED per mutant and exits 1 if any survived.
"""

from __future__ import annotations

import os
import subprocess
import sys

PYTHON = sys.executable
TESTS = "tests/test_regressions_issue16.py"

# (name, file, old text, new text); see the numbered list in issue 16.
MUTANTS: list[tuple[str, str, str, str]] = [
    (
        "1a",
        "agent_core/executor.py",
        "if later.status is StepStatus.PENDING:",
        "if later.status is not StepStatus.PENDING:",
    ),
    ("1b", "agent_core/executor.py", "if later.status is StepStatus.PENDING:", "if True:"),
    ("2", "agent_core/catalog.py", "", ""),  # drops the whole already_cancelled rule
    (
        "3a",
        "agent_core/answers.py",
        'f", expected {eta}." if eta and data["status"] == "shipping"',
        'f", expected {eta}." if eta or data["status"] != "shipping"',
    ),
    (
        "3b",
        "agent_core/answers.py",
        'f", expected {eta}." if eta and data["status"] == "shipping"',
        'f", expected {eta}." if data["status"] != "pending"',
    ),
    ("4", "agent_core/answers.py", "            text += (", "            text = ("),
    (
        "5",
        "agent_core/answers.py",
        'return REFUSALS.get(run.refusal, REFUSALS["unsupported"])[lang]',
        'return REFUSALS["unsupported"][lang]',
    ),
    (
        "6",
        "agent_core/answers.py",
        'if error is ErrorType.INVALID_ARGUMENTS and step.tool == "cancel_order":',
        'if error is ErrorType.INVALID_ARGUMENTS or step.tool == "cancel_order":',
    ),
    (
        "7",
        "agent_core/answers.py",
        "if status in (StepStatus.PENDING, StepStatus.RUNNING) and run.is_terminal:",
        "if status in (StepStatus.PENDING, StepStatus.RUNNING) or run.is_terminal:",
    ),
    (
        "8",
        "agent_core/answers.py",
        'NEXT_STEP_AFTER_FAILURE.get(run.stop_reason or "", DEFAULT_NEXT_STEP)[lang]',
        "DEFAULT_NEXT_STEP[lang]",
    ),
    (
        "9",
        "agent_core/answers.py",
        '            if step.retry_count\n            else ("完成"',
        '            if step.retry_count >= 0\n            else ("完成"',
    ),
    (
        "10a",
        "storage/runs.py",
        "        if event.step_id is None:\n            whole = True",
        "        if event.step_id is None:\n            whole = False",
    ),
    ("10b", "storage/runs.py", "        error.type.value if error else None,", "        None,"),
    ("10c", "storage/runs.py", '"approved" if approved else "declined",', '"approved",'),
]


def _mutate(name: str, src: str, old: str, new: str) -> str:
    if name == "2":
        start = src.index('        rule(\n            "already_cancelled",')
        end = src.index("        ),\n    ),\n)", start) + len("        ),\n")
        return src[:start] + src[end:]
    if src.count(old) != 1:
        raise SystemExit(f"mutant {name}: the text to mutate is gone; update this list")
    return src.replace(old, new)


def main(only: list[str]) -> int:
    survived = 0
    for name, path, old, new in MUTANTS:
        if only and name not in only:
            continue
        if subprocess.run(["git", "diff", "--quiet", "--", path], check=False).returncode:
            raise SystemExit(f"{path} has uncommitted changes; commit or stash them first")
        with open(path, encoding="utf-8") as f:
            src = f.read()
        with open(path, "w", encoding="utf-8") as f:
            f.write(_mutate(name, src, old, new))
        try:
            result = subprocess.run(
                [PYTHON, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", TESTS],
                capture_output=True,
                text=True,
                check=False,
                env={**os.environ, "PYTHONPATH": os.getcwd()},
            )
        finally:
            subprocess.run(["git", "checkout", "--", path], check=True)
        killed = result.returncode != 0
        survived += not killed
        print(f"{name:>4} {'KILLED' if killed else 'SURVIVED'}  {path}")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
