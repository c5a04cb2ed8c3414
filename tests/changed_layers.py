"""`make check`'s test selection: the unit tests of the layers a change touches.

A layer's unit tests are the test modules that import that layer's package and nothing of
the layers above it (`LAYERS`, bottom first, as the import-linter contract orders them):
`agent_core` tests import no storage, bot, console or stepwise; `storage` tests no bot,
console or stepwise; and so on. Subprocess, browser and reliability suites are never unit
tests. A change is what `git` shows against HEAD (staged, unstaged, untracked); a changed
test module is run as well. Prints the selected modules, one per line (nothing: no test).

    python tests/changed_layers.py            # what `make check` runs
    python tests/changed_layers.py --all      # every layer's unit tests
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Bottom first; a package may import only those before it (standin stands alone).
LAYERS = ("agent_core", "storage", "serving", "bot", "console", "stepwise")
STANDALONE = ("standin",)
NOT_UNIT = ("tests/reliability/", "tests/browser/", "tests/mutation/")
_IMPORT = re.compile(r"^\s*(?:from|import)\s+(\w+)", re.MULTILINE)
# Test helpers a module imports count as its own imports (`tests.harness` brings the bot).
_HELPER = re.compile(r"^\s*(?:from|import)\s+(?:tests\.|\.)([\w.]+)", re.MULTILINE)


def changed_paths() -> list[str]:
    """Files changed against HEAD, untracked ones included (paths relative to the root)."""
    out = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line[3:].split(" -> ")[-1] for line in out.splitlines() if len(line) > 3]


def packages_of(path: Path, seen: set[Path] | None = None) -> set[str]:
    """The project packages a test module imports, through the test helpers it imports."""
    seen = set() if seen is None else seen
    seen.add(path)
    text = path.read_text(encoding="utf-8")
    found = {name for name in _IMPORT.findall(text) if name in LAYERS + STANDALONE}
    for helper in _HELPER.findall(text):
        base = ROOT / "tests" if "tests." in text else path.parent
        for candidate in (
            base / (helper.replace(".", "/") + ".py"),
            path.parent / (helper.replace(".", "/") + ".py"),
            base / helper.replace(".", "/") / "__init__.py",
        ):
            if candidate.exists() and candidate not in seen:
                found |= packages_of(candidate, seen)
                break
    return found


def layer_of(imported: set[str]) -> str | None:
    """The highest layer a test module reaches: the layer whose unit test it is."""
    for name in reversed(LAYERS):
        if name in imported:
            return name
    return next((name for name in STANDALONE if name in imported), None)


def unit_tests() -> dict[str, list[str]]:
    """Every unit test module by its layer."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(NOT_UNIT):
            continue
        layer = layer_of(packages_of(path))
        if layer is not None:
            found.setdefault(layer, []).append(rel)
    return found


def select(changed: list[str], every: bool = False) -> list[str]:
    by_layer = unit_tests()
    touched = {p.split("/", 1)[0] for p in changed} & set(LAYERS + STANDALONE)
    chosen = {t for layer in (by_layer if every else touched) for t in by_layer.get(layer, [])}
    chosen |= {
        p
        for p in changed
        if p.startswith("tests/")
        and Path(p).name.startswith("test_")
        and p.endswith(".py")
        and not p.startswith(NOT_UNIT)
        and (ROOT / p).exists()
    }
    return sorted(chosen)


if __name__ == "__main__":
    print("\n".join(select(changed_paths(), every="--all" in sys.argv[1:])))
