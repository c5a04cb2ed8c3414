"""Every screenshot the README and the docs show exists (`make screenshots` writes the
demo's). An image is a path relative to the page that shows it (docs/*.md write
`screenshots/…`), as GitHub resolves it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHOWN = re.compile(r"!\[[^\]]*\]\(([^)\s]+\.png)\)")  # a markdown image
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_every_screenshot_the_docs_name_exists() -> None:
    named = {(doc, ref) for doc in DOCS for ref in SHOWN.findall(doc.read_text())}
    assert any(doc.name == "README.md" for doc, _ in named), "the README shows no screenshot"
    missing = sorted(
        f"{doc.relative_to(ROOT)}: {ref}" for doc, ref in named if not (doc.parent / ref).is_file()
    )
    assert not missing, f"named but not in the repository: {missing}"


def test_the_screenshot_script_writes_what_the_docs_show() -> None:
    script = (ROOT / "tests" / "browser" / "screenshots.py").read_text()
    for doc in DOCS:
        for ref in SHOWN.findall(doc.read_text()):
            name = ref.rsplit("/", 1)[1]
            if name.startswith("demo-"):
                assert f'"{name}"' in script, f"{name} is in {doc.name} but no script takes it"


def test_the_image_pattern() -> None:
    page = "![a](docs/screenshots/demo-a.png) and ![b c](screenshots/b.png), not docs/x.png"
    assert SHOWN.findall(page) == ["docs/screenshots/demo-a.png", "screenshots/b.png"]
