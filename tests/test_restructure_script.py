"""scripts/restructure.py's rewriting (issue 24 item 3): pure text in, text out.

The script itself runs once, on the final main; these check the rewrites it applies to
every file, so a change to it is tested before that day (and they hold on either layout).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "restructure.py"


@pytest.fixture(scope="module")
def rs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("restructure", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rewrite(rs: ModuleType, text: str) -> str:
    return str(rs.rewrite(text, rs.Maps(rs.MOVES)))


def test_imports_of_moved_modules(rs: ModuleType) -> None:
    assert rewrite(rs, "from agent_core.executor import Executor\n") == (
        "from agent_core.execution.executor import Executor\n"
    )
    assert rewrite(rs, "import storage.runs\nstorage.runs._JOURNAL\n") == (
        "import storage.runs.sqlite\nstorage.runs.sqlite._JOURNAL\n"
    )
    assert rewrite(rs, "from agent_core.recognition.intents import X\n") == (
        "from agent_core.understanding.recognition.intents import X\n"
    )


def test_a_module_imported_from_its_package(rs: ModuleType) -> None:
    assert rewrite(rs, "from agent_core import transitions\n") == (
        "from agent_core.execution import transitions\n"
    )
    # renamed on the way, and never rewritten twice (`agent_core.answers` is both names)
    assert rewrite(rs, "from agent_core import answer_notes\n") == (
        "from agent_core.answers import notes as answer_notes\n"
    )
    assert rewrite(rs, "from storage import pg, tables\n") == "from storage import pg, tables\n"


def test_names_in_strings_and_prose(rs: ModuleType) -> None:
    assert rewrite(rs, 'patch("agent_core.catalog.CATALOG")') == (
        'patch("agent_core.catalog.builtin.CATALOG")'
    )
    assert rewrite(rs, "see `agent_core.understanding`.") == (
        "see `agent_core.understanding.understand`."
    )
    assert rewrite(rs, "storage.runs/pg_runs") == "storage.runs.sqlite/postgres"
    assert rewrite(rs, "agent_core.executor.x_run__mutmut_1") == (
        "agent_core.execution.executor.x_run__mutmut_1"
    )
    # attribute access on a variable that happens to be called storage is left alone
    assert rewrite(rs, "self.storage.runs") == "self.storage.runs"


def test_paths(rs: ModuleType) -> None:
    assert rewrite(rs, '"agent_core/answers.py",') == '"agent_core/answers/compose.py",'
    assert rewrite(rs, "(agent_core/recognition/intents.toml)") == (
        "(agent_core/understanding/recognition/intents.toml)"
    )
    assert rewrite(rs, "`storage/shop_seed.json`") == "`storage/shop/seed.json`"
    assert rewrite(rs, '/ "storage" / "shop_seed.json"') == '/ "storage" / "shop" / "seed.json"'
    assert rewrite(rs, "agent_core/http/text.py") == "agent_core/http/text.py"


def test_every_move_lands_in_a_new_package(rs: ModuleType) -> None:
    targets = {str(Path(new).parent) for _, new in rs.MOVES}
    assert targets - {"agent_core/understanding/recognition"} <= set(rs.PACKAGES)
    news = [new for _, new in rs.MOVES]
    assert len(news) == len(set(news)), "two modules moved to one place"
