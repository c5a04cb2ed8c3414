"""Regular expressions compiled the first time they are used, not when their module loads.

The rule planner declares its vocabulary as ~210 module-level patterns. Compiling all of
them took ~0.4 s of CPU at every start of every process (`stepwise ask`, `runs`, `serve`,
each test's subprocess), about a third of the whole import; one request uses about half of
them, and a command that plans nothing (`runs`, `confirm`, `doctor`) uses none.

`compile` is a drop-in for `re.compile` at module level. The first call of a method
compiles the pattern (through `re.compile`, so with its cache) and puts the compiled
pattern's own bound methods on the instance, so every later call goes straight to C with
no wrapper in between. Every pattern made here is kept in `DECLARED`, so that a test can
compile them all: a pattern that does not compile still fails `make test`, not a customer's
first message. For the same reason a pattern built from a setting (the order id pattern)
is compiled with `re.compile`, where it is read: a bad setting is refused at start.
"""

from __future__ import annotations

import re
import sys
import weakref
from collections.abc import Callable, Iterator
from typing import Any

# Weakly: a pattern made for an object (a shop's own phrases) goes with it.
DECLARED: weakref.WeakSet[LazyPattern] = weakref.WeakSet()


class LazyPattern:
    """The methods of `re.Pattern[str]` that the planner uses, compiled on first use."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags

    def compiled(self) -> re.Pattern[str]:
        """Compile now (once): later calls of the methods below skip this class entirely."""
        compiled = re.compile(self.pattern, self.flags)
        vars(self).update(
            compiled=lambda: compiled,
            search=compiled.search,
            match=compiled.match,
            fullmatch=compiled.fullmatch,
            finditer=compiled.finditer,
            findall=compiled.findall,
            sub=compiled.sub,
            split=compiled.split,
        )
        return compiled

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled().search(string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled().match(string, pos, endpos)

    def fullmatch(
        self, string: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[str] | None:
        return self.compiled().fullmatch(string, pos, endpos)

    def finditer(
        self, string: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[str]]:
        return self.compiled().finditer(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        return self.compiled().findall(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        return self.compiled().sub(repl, string, count)

    def split(self, string: str, maxsplit: int = 0) -> list[str | Any]:
        return self.compiled().split(string, maxsplit)

    def __repr__(self) -> str:
        return f"lazyre.compile({self.pattern!r})"


def compile(pattern: str, flags: int = 0) -> LazyPattern:
    """`re.compile`, deferred to the pattern's first use (see the module's docstring)."""
    lazy = LazyPattern(pattern, flags)
    DECLARED.add(lazy)
    return lazy
