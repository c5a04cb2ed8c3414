#!/usr/bin/env python3
"""Issue 24 item 3: packages that show the concepts, applied by a script (stdlib only).

Other work keeps changing these modules, so the restructure is not a branch of moved files:
it is this script, run once from the repository root on a clean checkout of the final main:

    python3 scripts/restructure.py --dry-run   # print the plan, change nothing
    python3 scripts/restructure.py             # git mv, rewrite, print what it did

What it does, in order:

1. refuses unless the tree is clean (`git status`) and still has the old layout (it runs once:
   a second run finds the new packages and stops);
2. `git mv`s each module of `MOVES` to its concept package and writes the packages'
   `__init__.py` (a docstring only: nothing is re-exported, each name has one home);
3. rewrites every reference to a moved module in every tracked text file: Python imports
   (`from agent_core.executor import …`, `import storage.runs`, `from agent_core import
   transitions`), dotted names in strings and prose (`patch("agent_core.executor.x")`,
   mutmut's mutant names, docstrings) and file paths (`agent_core/executor.py` in
   pyproject's mutmut config, the Makefile, the README, tests);
4. adds the order of the concepts inside `agent_core` to the import-linter contracts (a
   layers contract; the acyclic-siblings one already reaches into subpackages);
5. regenerates the `agent_core/` and `storage/` entries of the README's "Where things are"
   from the tree (the other entries only get their references rewritten);
6. sorts imports and formats the changed Python files with the project's ruff.

Classes and functions are never split or edited: only imports and module paths change.
A module that is not in `MOVES` (added after this script was written) stays where it is
and is reported; its imports of moved modules are rewritten like everyone else's.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

# Old path -> new path, relative to the root. A directory moves with everything in it.
MOVES: list[tuple[str, str]] = [
    # The understanding pipeline (in flow order): a message is read, its words looked up,
    # its clauses seen, understood, asked back about, planned (by rules or a model),
    # recognised against the declared examples, narrowed by what earlier runs observed,
    # and scored (`stepwise eval`).
    ("agent_core/reading.py", "agent_core/understanding/reading.py"),
    ("agent_core/lexicon.py", "agent_core/understanding/lexicon.py"),
    ("agent_core/lexicon_intents.py", "agent_core/understanding/lexicon_intents.py"),
    ("agent_core/clause_view.py", "agent_core/understanding/clause_view.py"),
    ("agent_core/understanding.py", "agent_core/understanding/understand.py"),
    ("agent_core/clarifying.py", "agent_core/understanding/clarifying.py"),
    ("agent_core/recognition", "agent_core/understanding/recognition"),
    ("agent_core/recognised.py", "agent_core/understanding/recognised.py"),
    ("agent_core/order_facts.py", "agent_core/understanding/order_facts.py"),
    ("agent_core/planner.py", "agent_core/understanding/planner.py"),
    ("agent_core/model_planner.py", "agent_core/understanding/model_planner.py"),
    ("agent_core/model_output.py", "agent_core/understanding/model_output.py"),
    ("agent_core/evaluation.py", "agent_core/understanding/evaluation.py"),
    # Carrying a plan out: the loop, its state changes, the tool registry, what a result
    # must be, the failure policy, the skip rules, who approves.
    ("agent_core/executor.py", "agent_core/execution/executor.py"),
    ("agent_core/transitions.py", "agent_core/execution/transitions.py"),
    ("agent_core/tools.py", "agent_core/execution/tools.py"),
    ("agent_core/results.py", "agent_core/execution/results.py"),
    ("agent_core/policy.py", "agent_core/execution/policy.py"),
    ("agent_core/rules.py", "agent_core/execution/rules.py"),
    ("agent_core/approval.py", "agent_core/execution/approval.py"),
    # The declared tools.
    ("agent_core/spec.py", "agent_core/catalog/spec.py"),
    ("agent_core/contracts.py", "agent_core/catalog/contracts.py"),
    ("agent_core/catalog.py", "agent_core/catalog/builtin.py"),
    # The customer's answer.
    ("agent_core/answers.py", "agent_core/answers/compose.py"),
    ("agent_core/answer_notes.py", "agent_core/answers/notes.py"),
    ("agent_core/render.py", "agent_core/answers/render.py"),
    # The demo shop in one place. Only storage and the composition root import its tools
    # (agent_core never does), so they sit next to its two backends, below the layering
    # line that lets storage import agent_core.
    ("agent_core/shop.py", "storage/shop/tools.py"),
    ("agent_core/shop_rules.py", "storage/shop/rules.py"),
    ("storage/shop_core.py", "storage/shop/core.py"),
    ("storage/shop_ledger.py", "storage/shop/ledger.py"),
    ("storage/shop_seed.py", "storage/shop/seed.py"),
    ("storage/shop_seed.json", "storage/shop/seed.json"),
    ("storage/shop.py", "storage/shop/sqlite.py"),
    ("storage/pg_shop.py", "storage/shop/postgres.py"),
    # storage by store, the two backends side by side.
    ("storage/runs.py", "storage/runs/sqlite.py"),
    ("storage/pg_runs.py", "storage/runs/postgres.py"),
    ("storage/inbox.py", "storage/inbox/sqlite.py"),
    ("storage/pg_inbox.py", "storage/inbox/postgres.py"),
    ("storage/revocations.py", "storage/revocations/sqlite.py"),
    ("storage/pg_revocations.py", "storage/revocations/postgres.py"),
    ("storage/pg_ratelimit.py", "storage/ratelimit/postgres.py"),
]

# New packages and their docstrings (the only thing in their __init__.py).
PACKAGES: dict[str, str] = {
    "agent_core/understanding": (
        "Understanding a message: a `Reading` in, an `Interpretation` and a short plan out."
    ),
    "agent_core/execution": (
        "Carrying a plan out: plan -> next step -> act -> observe -> update -> answer."
    ),
    "agent_core/catalog": "The declared tools: their specs, result contracts and the built-in table.",
    "agent_core/answers": "The customer's answer, built only from what the steps observed.",
    "storage/shop": "The demo shop: its tools, rules and seed, and its SQLite and PostgreSQL backends.",
    "storage/runs": "The runs journal, claim and load: the SQLite and PostgreSQL backends.",
    "storage/inbox": "The durable inbox (every update stored before it is acknowledged): SQLite and PostgreSQL.",
    "storage/revocations": "Signed-out console sessions, kept with the runs: the SQLite and PostgreSQL backends.",
    "storage/ratelimit": "Rate-limit budgets shared by every process of a bot (PostgreSQL).",
}

# Modules that stay at the top of their package (not an oversight; see --help's epilog).
STAYS = {
    "agent_core": [
        "__init__", "agent", "models", "interpretation", "ids", "logcontext", "http",
    ],
    "storage": [
        "__init__", "db", "pg", "pg_schema", "writequeue", "tables", "journal", "leases",
        "history", "handoffs", "records", "store", "probe",
    ],
}  # fmt: skip

# Literal rewrites applied before the generic ones (references split across strings, globs).
LITERALS: list[tuple[str, str]] = [
    ('/ "storage" / "shop_seed.json"', '/ "storage" / "shop" / "seed.json"'),
    ("storage/pg*.py", "storage/pg.py and storage/*/postgres.py"),
]
# Literal rewrites inside one moved file (new path): names relative to the module itself.
LOCAL_LITERALS: dict[str, list[tuple[str, str]]] = {
    "storage/shop/seed.py": [('with_name("shop_seed.json")', 'with_name("seed.json")')],
}

# The order of the concepts inside agent_core, top first (a layers contract).
AGENT_CORE_LAYERS = [
    "agent | http",
    "execution",
    "answers",
    "understanding",
    "catalog",
    "models",
]

# README "Where things are": what each entry says, by module (new layout). A module found
# in the tree but not here is listed by name only.
README_ENTRIES: dict[str, list[tuple[str, str]]] = {
    "agent_core": [
        ("models", "plans, steps, runs, typed tool results"),
        ("interpretation", "what was understood, held by a run"),
        ("agent", "ask / claim / proceed / recover"),
        ("understanding/", "in flow order"),
        ("understanding/reading", "clean text, order ids, an address"),
        ("understanding/lexicon", "policy topics, keyword tables"),
        ("understanding/lexicon_intents", "actions, negation, questions"),
        ("understanding/clause_view", "what one clause says"),
        ("understanding/understand", "the rule reading: a `Reading` in, an `Interpretation` out"),
        ("understanding/clarifying", "the question asked back"),
        ("understanding/recognition/", "compared with the declared intents"),
        ("understanding/recognised", "recognition applied to the rule reading"),
        ("understanding/order_facts", "what earlier runs observed about orders"),
        ("understanding/planner", "rule-based, zh + en"),
        ("understanding/model_planner", "optional, any OpenAI-compatible endpoint"),
        ("understanding/model_output", "what a model may answer, checked"),
        ("understanding/evaluation", "`stepwise eval`"),
        ("execution/", ""),
        ("execution/executor", "plan → next step → act → observe → update plan → answer"),
        ("execution/transitions", "pure state changes"),
        ("execution/tools", "registry"),
        ("execution/results", "contracts and bounds every result keeps"),
        ("execution/policy", "what to do when a tool fails"),
        ("execution/rules", "observations that skip later steps"),
        ("execution/approval", "who must approve a high-risk call"),
        ("catalog/", ""),
        ("catalog/builtin", "one table of tool specs"),
        ("catalog/spec", "the parts of one entry"),
        ("catalog/contracts", "built-in arguments and results"),
        ("answers/", ""),
        ("answers/compose", "text built only from observations"),
        ("answers/notes", "what the answer says about the understanding"),
        ("answers/render", "results in the customer's words"),
        (
            "http/",
            "tools served by your API, declared in TOML",
        ),
        ("http/text", "HTML to plain text"),
        ("http/address", "a one-line address split into its parts"),
        ("ids", "Telegram ids, checked where they come in"),
        ("logcontext", "what a log line is about"),
    ],
    "storage": [
        ("db", "SQLite connection, migrations"),
        ("pg", "PostgreSQL connection"),
        ("pg_schema", "its migrations"),
        ("writequeue", "group commit"),
        ("tables", "one column list per table, row mapping"),
        ("journal", "the rows a commit writes"),
        ("leases", "which process drives a run"),
        ("history", "every staff read"),
        ("handoffs", "handoffs to a person"),
        ("records", "read models, the run JSON shape, the timeline line"),
        ("store", "which backend a `STEPWISE_DB` opens"),
        ("probe", "`stepwise doctor`"),
        ("runs/", "journal, claim, load"),
        ("runs/sqlite", ""),
        ("runs/postgres", ""),
        ("inbox/", "every update stored before it is acknowledged"),
        ("revocations/", "signed-out console sessions"),
        ("ratelimit/", "budgets shared by every process"),
        ("shop/", "the demo shop in one place"),
        ("shop/tools", "the shop as tools, over a `ShopBackend`"),
        ("shop/rules", "when it refuses a change"),
        ("shop/core", "its operations, once for both backends"),
        ("shop/ledger", "changes keyed by idempotency key"),
        ("shop/seed", "and `seed.json`"),
        ("shop/sqlite", ""),
        ("shop/postgres", ""),
    ],
}

# How an entry introduces its subpackages.
SUBPACKAGES_SAY = {"agent_core": "by concept", "storage": "by store, the two backends side by side"}

# Not rewritten: this script and its test hold the old names on purpose.
SELF = ("scripts/restructure.py", "tests/test_restructure_script.py")
_DOTTED = re.compile(r"(?<![\w.])((?:agent_core|storage)(?:\.\w+)+)(/pg_\w+\b)?")
_PATH = re.compile(r"(?<![\w.-])((?:agent_core|storage)/[\w./-]*)")
_FROM_PKG = re.compile(r"^([ \t]*)from (agent_core|storage) import ([\w, ]+?)[ \t]*$", re.M)


def git(*args: str, capture: bool = True) -> str:
    done = subprocess.run(["git", *args], capture_output=capture, text=True, check=True)
    return done.stdout if capture else ""


def dotted(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


class Maps:
    def __init__(self, moves: list[tuple[str, str]]) -> None:
        self.paths: dict[str, str] = {}  # file or directory path -> new path
        self.modules: dict[str, str] = {}  # dotted module or package -> new dotted
        for old, new in moves:
            self.paths[old] = new
            if old.endswith(".py") or "." not in Path(old).name:  # a module or a package
                self.modules[dotted(old)] = dotted(new)

    def module(self, name: str) -> str:
        parts = name.split(".")
        for i in range(len(parts), 1, -1):
            head = ".".join(parts[:i])
            if head in self.modules:
                return ".".join([self.modules[head], *parts[i:]])
        return name

    def path(self, text: str) -> str:
        core = text.rstrip(".")
        tail = text[len(core) :]
        if core in self.paths:
            return self.paths[core] + tail
        if core + ".py" in self.paths:
            return self.paths[core + ".py"].removesuffix(".py") + tail
        for old, new in self.paths.items():
            if not old.endswith((".py", ".json")) and (core == old or core.startswith(old + "/")):
                return new + core[len(old) :] + tail
        return text


def rewrite_from_package(text: str, maps: Maps) -> str:
    """`from agent_core import transitions` -> `from agent_core.execution import transitions`."""

    def one(m: re.Match[str]) -> str:
        indent, package, names = m.group(1), m.group(2), m.group(3)
        kept: list[str] = []
        lines: list[str] = []
        for item in (n.strip() for n in names.split(",") if n.strip()):
            name, _, alias = item.partition(" as ")
            name, alias = name.strip(), alias.strip()
            full = f"{package}.{name}"
            if full not in maps.modules:
                kept.append(item)
                continue
            parent, _, leaf = maps.modules[full].rpartition(".")
            bound = alias or name
            lines.append(
                f"{indent}from {parent} import {leaf}" + (f" as {bound}" if leaf != bound else "")
            )
        if kept:
            lines.insert(0, f"{indent}from {package} import {', '.join(kept)}")
        return "\n".join(lines)

    return _FROM_PKG.sub(one, text)


def rewrite(text: str, maps: Maps) -> str:
    """One pass of each kind, so a rewritten name is never rewritten again."""
    for old, new in LITERALS:
        text = text.replace(old, new)

    def name(m: re.Match[str]) -> str:
        old, pair = m.group(1), m.group(2) or ""
        new = maps.module(old)
        # "storage.runs/pg_runs" (both backends of a store) -> "storage.runs.sqlite/postgres"
        if pair and new != old and pair == "/pg_" + old.rsplit(".", 1)[-1]:
            return new + "/postgres"
        return new + pair

    text = _DOTTED.sub(name, text)
    text = _PATH.sub(lambda m: maps.path(m.group(1)), text)
    return rewrite_from_package(text, maps)


def importlinter(text: str) -> str:
    """agent_core's concepts in order, as a layers contract.

    The acyclic-siblings contract needs no change: it already searches the children of each
    ancestor down to 10 levels (import-linter's default `depth`), so the new subpackages
    (`agent_core.understanding`, `storage.runs`, …) are checked with no new line.
    """
    layers = ", ".join(f'"{layer}"' for layer in AGENT_CORE_LAYERS)
    contract = (
        "\n[[tool.importlinter.contracts]]\n"
        'name = "agent_core by concept: agent | http -> execution -> answers -> understanding'
        ' -> catalog -> models"\n'
        'type = "layers"\n'
        'containers = ["agent_core"]\n'
        f"layers = [{layers}]\n"
    )
    anchor = text.index("[[tool.importlinter.contracts]]", text.index('type = "layers"'))
    return text[:anchor] + contract.lstrip("\n") + "\n" + text[anchor:]


def modules_in(package: Path) -> list[str]:
    """Module names of a package, relative to it (`runs/sqlite`), subpackages as `name/`."""
    found = []
    for p in sorted(package.iterdir()):
        if p.name.startswith(("_", ".")):
            continue
        if p.is_dir() and (p / "__init__.py").exists():
            found.append(p.name + "/")
        elif p.suffix == ".py":
            found.append(p.stem)
    return found


def readme_entry(package: str) -> str:
    """The README's "Where things are" entry of a package, from the tree and `README_ENTRIES`.

    Top-level modules on the first line, then one sub-item per subpackage with its modules:
    in the table's order, then whatever else the tree has (a module added after this script
    was written is listed by name).
    """
    root = Path(package)
    table = [name for name, _ in README_ENTRIES[package]]
    known = dict(README_ENTRIES[package])

    def there(rel: str) -> bool:
        return (
            (root / rel / "__init__.py").exists()
            if rel.endswith("/")
            else (root / f"{rel}.py").exists()
        )

    def item(rel: str, short: str) -> str:
        what = known.get(rel, "")
        return f"`{short}`" + (f" ({what})" if what else "")

    top = [n for n in table if "/" not in n and there(n)]
    top += [m for m in modules_in(root) if "/" not in m and m not in top]
    subs = [n for n in table if n.endswith("/") and n.count("/") == 1 and there(n)]
    subs += [m for m in modules_in(root) if m.endswith("/") and m not in subs]
    head = ", ".join(item(n, n) for n in top)
    lines = [
        wrap(
            head + (f"; {SUBPACKAGES_SAY[package]}:" if subs else "."), f"- **{package}/** — ", "  "
        )
    ]
    for sub in subs:
        inside = [
            n
            for n in table
            if n.startswith(sub) and n != sub and "/" not in n[len(sub) :].rstrip("/")
        ]
        inside = [n for n in inside if there(n)]
        inside += [sub + m for m in modules_in(root / sub) if sub + m not in inside]
        body = ", ".join(item(n, n[len(sub) :]) for n in inside)
        lines.append(wrap(f"{item(sub, sub)}: {body}.", "  - ", "    "))
    return "\n".join(lines)


def rewrite_readme_map(text: str) -> str:
    start = text.find("## Where things are")
    if start < 0:
        print("  README.md: no 'Where things are' section, left as it is")
        return text
    end = text.find("\n## ", start + 1)
    end = len(text) if end < 0 else end
    section = text[start:end]
    for package in ("storage", "agent_core"):
        m = re.search(rf"^- \*\*{package}/\*\* —.*?(?=^- \*\*|^\S|\Z)", section, re.M | re.S)
        if not m:
            print(f"  README.md: no '{package}/' entry in 'Where things are', left as it is")
            continue
        entry = readme_entry(package)
        section = section[: m.start()] + entry + "\n" + section[m.end() :]
    return text[:start] + section + text[end:]


def wrap(text: str, first: str, rest: str) -> str:
    return textwrap.fill(
        text,
        width=94,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    )


def text_files() -> list[Path]:
    out = []
    for name in git("ls-files", "-z").split("\0"):
        if not name or name in SELF:
            continue
        p = Path(name)
        if p.is_file() and not p.is_symlink():
            out.append(p)
    return out


def ruff() -> list[str] | None:
    for candidate in (Path(".venv/bin/ruff"), shutil.which("ruff")):
        if candidate and Path(candidate).exists():
            return [str(candidate)]
    return None


def check_start(maps: Maps, allow_dirty: bool) -> list[tuple[str, str]]:
    if not Path("pyproject.toml").exists() or not Path("agent_core").is_dir():
        raise SystemExit("restructure: run me from the repository root")
    done = [new for _, new in MOVES if Path(new).exists()] + [
        p for p in PACKAGES if Path(p, "__init__.py").exists()
    ]
    if done:
        raise SystemExit(
            "restructure: refusing to run twice, the new layout is already here: "
            + ", ".join(done[:5])
        )
    if not allow_dirty and git("status", "--porcelain"):
        raise SystemExit("restructure: the working tree is not clean; commit or stash first")
    present = [(o, n) for o, n in MOVES if Path(o).exists()]
    missing = [o for o, _ in MOVES if not Path(o).exists()]
    if len(present) < len(MOVES) // 2:
        raise SystemExit("restructure: most modules to move are gone; is this the old layout?")
    for o in missing:
        print(f"  warning: {o} is not in the tree any more, skipped")
    return present


def unexpected() -> list[str]:
    moved = {o for o, _ in MOVES}
    odd = []
    for package, stays in STAYS.items():
        for p in sorted(Path(package).iterdir()):
            if p.name.startswith(".") or p.name == "__pycache__":
                continue
            rel = f"{package}/{p.name}"
            if rel not in moved and p.stem not in stays and p.name not in stays:
                odd.append(rel)
    return odd


def rewrite_tree(files: list[Path], maps: Maps, moved: set[str], *, write: bool) -> list[Path]:
    """Rewrite every reference in `files` (their paths before the moves); the changed ones.

    Not writing (a dry run), the files are read where they are and nothing is written.
    """
    changed: list[Path] = []
    longer = 0
    print("restructure: references " + ("rewritten" if write else "to rewrite"))
    for before in files:
        path = Path(maps.path(str(before))) if write else before
        key = maps.path(str(before))  # where the file is (or will be) after the moves
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        new = rewrite(text, maps)
        for old, repl in LOCAL_LITERALS.get(key, []):
            new = new.replace(old, repl)
        if key == "pyproject.toml":
            new = importlinter(new)
        if key == "README.md" and write:
            new = rewrite_readme_map(new)
        if new == text:
            continue
        changed.append(path)
        was = text.splitlines()
        now = new.splitlines()
        lines = sum(a != b for a, b in zip(was, now, strict=False)) + abs(len(was) - len(now))
        if key.endswith(".py"):
            longer += sum(len(n) > 100 >= len(w) for w, n in zip(was, now, strict=False))
        print(f"  {key}: {lines} line(s)" + ("  (moved)" if str(before) in moved else ""))
        if write:
            path.write_text(new, encoding="utf-8")
    if longer:
        print(
            f"  note: {longer} Python line(s) grew past 100 characters (longer module names in"
            " comments and docstrings; ruff's E501 is off, code lines are re-wrapped by ruff format)"
        )
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    ap.add_argument("--allow-dirty", action="store_true", help="run on an unclean tree")
    ap.add_argument("--no-format", action="store_true", help="do not run ruff afterwards")
    args = ap.parse_args(argv)

    maps = Maps(MOVES)
    present = check_start(maps, args.allow_dirty or args.dry_run)
    maps = Maps(present)
    print("restructure: moves")
    for old, new in present:
        print(f"  git mv {old} {new}")
    for rel in unexpected():
        print(f"  warning: {rel} is not in this script's map; it stays where it is")
    if args.dry_run:
        rewrite_tree(text_files(), maps, {o for o, _ in present}, write=False)
        print("restructure: dry run, nothing changed")
        return 0

    files_before = text_files()
    for package in PACKAGES:
        Path(package).mkdir(parents=True, exist_ok=True)
    for old, new in present:
        Path(new).parent.mkdir(parents=True, exist_ok=True)
        git("mv", old, new)
    for package, doc in PACKAGES.items():
        init = Path(package, "__init__.py")
        if not init.exists():
            init.write_text(f'"""{doc}"""\n', encoding="utf-8")
            git("add", str(init))
            print(f"  created {init}")

    changed = rewrite_tree(files_before, maps, {o for o, _ in present}, write=True)

    left = []
    gone = set(maps.modules)
    for path in map(Path, git("ls-files").split()):
        if path.suffix != ".py" or str(path) in SELF or not path.exists():
            continue
        for m in re.finditer(
            r"^\s*(?:from|import) ((?:agent_core|storage)[\w.]*)",
            path.read_text(encoding="utf-8"),
            re.M,
        ):
            if m.group(1) in gone and not Path(m.group(1).replace(".", "/")).exists():
                left.append(f"{path}: {m.group(0).strip()}")
    for line in left:
        print(f"  warning: import of a moved module left: {line}")

    py = [str(p) for p in changed if p.suffix == ".py"] + [
        str(Path(p, "__init__.py")) for p in PACKAGES
    ]
    tool = ruff()
    if args.no_format or tool is None:
        print(
            "restructure: imports not re-sorted; run `ruff check --select I --fix . && ruff format .`"
        )
    else:
        subprocess.run([*tool, "check", "--select", "I", "--fix", "-q", *py], check=False)
        subprocess.run([*tool, "format", "-q", *py], check=False)
        print(f"restructure: imports sorted and formatted by {tool[0]} in {len(py)} file(s)")
    git("add", "-A", ".")
    print(
        f"restructure: done: {len(present)} move(s), {len(PACKAGES)} package(s), "
        f"{len(changed)} file(s) rewritten; review with `git status` and commit"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
