"""Every screenshot the docs show exists (`make screenshots` writes the demo's)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHOWN = re.compile(r"docs/screenshots/[\w.-]+\.png")
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_every_screenshot_the_docs_name_exists() -> None:
    named = {(doc.name, ref) for doc in DOCS for ref in SHOWN.findall(doc.read_text())}
    assert any(doc == "README.md" for doc, _ in named), "the README shows no screenshot"
    missing = sorted(f"{doc}: {ref}" for doc, ref in named if not (ROOT / ref).is_file())
    assert not missing, f"named but not in the repository: {missing}"


def test_the_screenshot_script_writes_what_the_readme_shows() -> None:
    script = (ROOT / "tests" / "browser" / "screenshots.py").read_text()
    readme = (ROOT / "README.md").read_text()
    for ref in SHOWN.findall(readme):
        name = ref.rsplit("/", 1)[1]
        if name.startswith("demo-"):
            assert f'"{name}"' in script, f"{name} is in the README but no script takes it"
