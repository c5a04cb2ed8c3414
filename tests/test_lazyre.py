"""`agent_core.lazyre`: the planner's patterns compile on first use, and every one compiles."""

from __future__ import annotations

import importlib
import pkgutil
import re

import agent_core.understanding
from agent_core import lazyre


def test_every_declared_pattern_compiles() -> None:
    """A pattern is compiled at its first use now, not at import: this keeps a pattern that
    does not compile a `make test` failure rather than an error at a customer's message."""
    for module in pkgutil.walk_packages(
        agent_core.understanding.__path__, agent_core.understanding.__name__ + "."
    ):
        importlib.import_module(module.name)
    assert len(lazyre.DECLARED) > 150  # the planner's vocabulary is declared through it
    for pattern in lazyre.DECLARED:
        assert isinstance(pattern.compiled(), re.Pattern), pattern


def test_a_pattern_is_compiled_once_and_then_called_directly() -> None:
    lazy = lazyre.compile(r"(?<![a-z])ref(und)?s?(?![a-z])", re.IGNORECASE)
    assert "search" not in vars(lazy)  # nothing compiled at declaration
    assert lazy.pattern == r"(?<![a-z])ref(und)?s?(?![a-z])"
    first = lazy.search("a REFUND please")
    assert first is not None and first.group(0) == "REFUND"
    compiled = lazy.compiled()
    assert compiled.flags & re.IGNORECASE
    # The compiled pattern's own methods now sit on the instance: no wrapper in between.
    assert lazy.search == compiled.search and lazy.sub == compiled.sub
    assert lazy.sub("x", "refunds, refs") == "x, x"
    assert [m.group(0) for m in lazy.finditer("ref refund")] == ["ref", "refund"]
    assert lazy.findall("refunds") == ["und"]
    assert lazy.fullmatch("refund") is not None and lazy.match("prefund") is None
    assert lazy.split("a ref b") == ["a ", None, " b"]


def test_each_method_compiles_on_its_own_first_use() -> None:
    for use in (
        lambda p: p.match("ab"),
        lambda p: p.fullmatch("ab"),
        lambda p: list(p.finditer("ab")),
        lambda p: p.findall("ab"),
        lambda p: p.sub("", "ab"),
        lambda p: p.split("ab"),
    ):
        lazy = lazyre.compile("b")
        use(lazy)
        assert vars(lazy)["search"] == re.compile("b").search
