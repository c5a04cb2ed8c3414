""" "Where things are" names only modules and packages that exist (issue 24).

The section is in two places since issue 34 item 5: the README keeps the diagram, and
docs/architecture.md has the diagram's packages module by module. Both are read.

Read generically, so it holds for any layout they describe: in a code block, every
top-level `name/` is a directory; in an entry `- **package/** — …`, every module named in
backticks (`db`, `runs/sqlite`, `http/`) is a module or a package of that package. A name
with a slash is resolved from the package; a bare name may also be a module of one of its
subpackages (`understanding/`: …, `recognition/` names `understanding/recognition/`). Backticked words that are not module
names (`Agent`, `.env`, `stepwise standin`) are prose and not checked.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_ENTRY = re.compile(r"^- \*\*([\w/]+)/\*\* —(.*?)(?=^- \*\*|^\S|\Z)", re.M | re.S)
_NAME = re.compile(r"`([a-z_][a-z0-9_]*(?:/[a-z_][a-z0-9_]*)*/?)`")
_TOP = re.compile(r"^\s*(?:[│├└─ ]*)([a-z_]+)/", re.M)


README = ROOT / "README.md"
ARCHITECTURE = ROOT / "docs" / "architecture.md"  # the package map, module by module


def where_things_are(doc: Path = ARCHITECTURE) -> str:
    text = doc.read_text(encoding="utf-8")
    start = text.index("## Where things are")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def exists(package: Path, name: str) -> bool:
    module = name.rstrip("/")
    if name.endswith("/"):
        return (package / module / "__init__.py").exists()
    return (package / f"{module}.py").exists() or (package / module / "__init__.py").exists()


def exists_below(package: Path, name: str) -> bool:
    if exists(package, name):
        return True
    return "/" not in name.rstrip("/") and any(
        exists(sub.parent, name) for sub in package.rglob("__init__.py") if sub.parent != package
    )


def entries() -> list[tuple[str, list[str]]]:
    return [(m.group(1), _NAME.findall(m.group(2))) for m in _ENTRY.finditer(where_things_are())]


def packages() -> set[str]:
    """The top-level packages the wheel ships (pyproject.toml's hatch list)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    listed = re.search(r"^\[tool\.hatch\.build\.targets\.wheel\]\npackages = \[(.*?)\]", text, re.M)
    assert listed is not None
    return set(re.findall(r'"(\w+)"', listed.group(1)))


def test_the_map_has_an_entry_per_package() -> None:
    named = {package for package, _ in entries()}
    assert {"agent_core", "storage", "bot", "stepwise"} <= packages()
    assert packages() <= named, f"packages with no entry: {packages() - named}"


def test_every_module_the_map_names_exists() -> None:
    missing = [
        f"{package}/{name}"
        for package, names in entries()
        for name in names
        if not exists_below(ROOT / package, name)
    ]
    assert not missing, f"'Where things are' names modules that do not exist: {missing}"


@pytest.mark.parametrize("doc", [README, ARCHITECTURE], ids=lambda doc: doc.name)
def test_every_directory_of_the_diagram_exists(doc: Path) -> None:
    section = where_things_are(doc)
    block = section[section.index("```") : section.index("```", section.index("```") + 3)]
    tops = set(_TOP.findall(block.replace("```", "")))
    assert tops, "no directories found in the diagram"
    missing = sorted(name for name in tops if not (ROOT / name).is_dir())
    assert not missing, (
        f"{doc.name} 'Where things are' diagram names missing directories: {missing}"
    )


def test_the_readme_points_to_the_map() -> None:
    assert "docs/architecture.md#where-things-are" in where_things_are(README)
