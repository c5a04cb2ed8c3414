"""Validate eval-case files (default: every split next to this script).

A file is v1 (cases.jsonl: no `register` key) or v2 (dev.jsonl, heldout.jsonl: every line has
`register`); mixing the two in one file is a problem. Checks: every line parses; ids unique and
shaped <category>-<lang>-NNN; category, lang, register, kind, tool, topic and refusal values
valid for the file's version; step shape (order ids upper-case and matching the order pattern,
search_policy with order_id null); at most 4 steps; every high-risk step preceded by a
get_order_status step on the same order; lang agrees with the text (any Han character = zh);
no two cases with the same non-blank text up to whitespace (and context). v2 also: the adversarial
registers only in the adversarial category and back; `choices` takes no other key;
`unsupported` may name a can't-do `topic`. Prints counts per category and language (v2: per
register too). Exit code 1 when any problem is found. Standard library only.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

CATEGORIES = (
    "status", "multi_order", "cancel", "negation", "policy_noun", "scope", "unsupported",
    "handoff", "ambiguity", "context_reuse", "id_normalisation", "typos", "injection",
    "returns", "refunds", "address_change", "track_parcel", "no_order_needed",
    "empty_or_missing",
)  # fmt: skip
LANGS = ("zh", "en")
READ_TOOLS = {"get_order_status", "search_policy", "track_parcel"}
HIGH_RISK_TOOLS = {"cancel_order", "request_return", "request_refund", "change_address"}
TOOLS = READ_TOOLS | HIGH_RISK_TOOLS
TOPICS = {
    "returns", "refund", "shipping", "cancellation", "delay_compensation", "exchange", "warranty",
}  # fmt: skip
# v2 (tests/eval/README.md, "v2"): the intent families, registers, FAQ and can't-do topics.
CATEGORIES_V2 = (
    "status", "track", "cancel", "return", "refund", "address", "faq", "cant_do", "handoff",
    "choices", "clarify", "multi", "adversarial", "empty",
)  # fmt: skip
REGISTERS = (
    "plain", "typo", "run_on", "colloquial", "polite", "rude", "keyword", "indirect",
    "question_about_action", "negation", "multi_intent", "mixed_lang",
)  # fmt: skip
ADVERSARIAL_REGISTERS = (
    "homoglyph", "not_x", "retraction", "reported_speech", "hidden_instruction", "amount",
)  # fmt: skip
TOPICS_V2 = TOPICS | {
    "payment_methods", "delivery_countries", "delivery_times", "cancellation_fee",
    "refund_times", "invoices", "account_help", "newsletter",
}  # fmt: skip
CANT_DO_TOPICS = {
    "account", "place_order", "change_items", "payment_change", "discount", "review",
    "complaint", "other",
}  # fmt: skip
REFUSALS = {"empty", "missing_order_id"}
MAX_STEPS = 4
MIN_PER_CATEGORY = 12  # v1
MIN_PER_CATEGORY_V2 = 5
ORDER_ID = re.compile(r"[A-Z]\d{3,10}")
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
CASE_KEYS = {"id", "category", "lang", "text", "context", "expect"}
CASE_KEYS_V2 = CASE_KEYS | {"register"}


def check_steps(steps: Any, where: str, topics: set[str] = TOPICS) -> list[str]:
    problems: list[str] = []
    if not isinstance(steps, list):
        return [f"{where}: steps must be a list"]
    if len(steps) > MAX_STEPS:
        problems.append(f"{where}: {len(steps)} steps, at most {MAX_STEPS}")
    status_seen: set[str] = set()
    for i, step in enumerate(steps):
        at = f"{where}[{i}]"
        if not isinstance(step, dict):
            problems.append(f"{at}: step must be an object")
            continue
        tool, order_id = step.get("tool"), step.get("order_id", "<missing>")
        extra = set(step) - {"tool", "order_id", "topic"}
        if extra:
            problems.append(f"{at}: unknown keys {sorted(extra)}")
        if tool not in TOOLS:
            problems.append(f"{at}: unknown tool {tool!r}")
            continue
        if tool == "search_policy":
            if order_id is not None:
                problems.append(f"{at}: search_policy must have order_id null")
            if "topic" in step and step["topic"] not in topics:
                problems.append(f"{at}: unknown topic {step['topic']!r}")
            continue
        if "topic" in step:
            problems.append(f"{at}: only search_policy carries a topic")
        if not isinstance(order_id, str) or not ORDER_ID.fullmatch(order_id):
            problems.append(f"{at}: bad order_id {order_id!r}")
            continue
        if tool == "get_order_status":
            status_seen.add(order_id)
        elif tool in HIGH_RISK_TOOLS and order_id not in status_seen:
            problems.append(f"{at}: {tool} {order_id} not preceded by its get_order_status")
    return problems


def check_expect(expect: Any, where: str, v2: bool = False) -> list[str]:
    if not isinstance(expect, dict):
        return [f"{where}: expect must be an object"]
    kind = expect.get("kind")
    allowed = {
        "plan": {"kind", "steps"},
        "clarify": {"kind"},
        "unsupported": {"kind", "plan_steps"},
        "handoff": {"kind"},
        "refusal": {"kind", "refusal"},
    }
    if v2:
        allowed["choices"] = {"kind"}
    if kind not in allowed:
        return [f"{where}: unknown kind {kind!r}"]
    keys = set(expect)
    if v2 and kind == "unsupported":
        if "topic" in keys and expect["topic"] not in CANT_DO_TOPICS:
            return [f"{where}: unknown can't-do topic {expect['topic']!r}"]
        keys.discard("topic")
    if keys != allowed[kind]:
        return [f"{where}: kind {kind} needs exactly the keys {sorted(allowed[kind])}"]
    topics = TOPICS_V2 if v2 else TOPICS
    if kind == "plan":
        if not expect["steps"]:
            return [f"{where}: a plan needs at least one step"]
        return check_steps(expect["steps"], f"{where}.steps", topics)
    if kind == "unsupported":
        return check_steps(expect["plan_steps"], f"{where}.plan_steps", topics)
    if kind == "refusal" and expect["refusal"] not in REFUSALS:
        return [f"{where}: unknown refusal {expect['refusal']!r}"]
    return []


def is_v2(path: Path) -> bool:
    """A file is v2 when its first case has a `register` key."""
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            first = json.loads(line)
        except json.JSONDecodeError:
            return False
        return isinstance(first, dict) and "register" in first
    return False


def validate(path: Path) -> tuple[list[str], list[dict[str, Any]]]:
    problems: list[str] = []
    cases: list[dict[str, Any]] = []
    ids: set[str] = set()
    seen: dict[str, str] = {}
    v2 = is_v2(path)
    keys, categories = (CASE_KEYS_V2, CATEGORIES_V2) if v2 else (CASE_KEYS, CATEGORIES)
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        where = f"{path.name}:{n}"
        if not line.strip():
            problems.append(f"{where}: blank line")
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: not JSON ({exc})")
            continue
        if not isinstance(case, dict) or set(case) != keys:
            problems.append(f"{where}: keys must be exactly {sorted(keys)}")
            continue
        cid, cat, lang, text, ctx = (case[k] for k in ("id", "category", "lang", "text", "context"))
        where = f"{where} ({cid})"
        if cid in ids:
            problems.append(f"{where}: duplicate id")
        ids.add(cid)
        if cat not in categories:
            problems.append(f"{where}: unknown category {cat!r}")
        if v2:
            reg = case["register"]
            if reg not in REGISTERS + ADVERSARIAL_REGISTERS:
                problems.append(f"{where}: unknown register {reg!r}")
            elif (reg in ADVERSARIAL_REGISTERS) != (cat == "adversarial"):
                problems.append(f"{where}: register {reg} and category {cat} do not go together")
        if lang not in LANGS:
            problems.append(f"{where}: unknown lang {lang!r}")
        # The held-out split's ids carry its prefix (`ho-`), and issue 33's blind batch its
        # own (`bl-`, four digits), so no id is ever shared.
        if not re.fullmatch(
            rf"(?:ho-{re.escape(str(cat))}-{lang}-\d{{3}}|(?:bl-)?{re.escape(str(cat))}-{lang}-\d{{3,4}})",
            str(cid),
        ):
            problems.append(f"{where}: id should be [ho-|bl-]<category>-<lang>-NNN")
        if not isinstance(text, str):
            problems.append(f"{where}: text must be a string")
            continue
        if HAN.search(text) and lang != "zh":
            problems.append(f"{where}: text has Chinese characters but lang is {lang}")
        if not HAN.search(text) and re.search(r"[A-Za-z]", text) and lang != "en":
            problems.append(f"{where}: Latin-only text but lang is {lang}")
        if not isinstance(ctx, dict) or set(ctx) - {"last_order_id"}:
            problems.append(f"{where}: context must be {{}} or {{'last_order_id': ...}}")
        elif "last_order_id" in ctx and not ORDER_ID.fullmatch(str(ctx["last_order_id"])):
            problems.append(f"{where}: bad last_order_id {ctx['last_order_id']!r}")
        # Duplicates up to leading/trailing whitespace: inner spaces can be the point of a
        # case ("refund 59" vs "refund 5 9"); blank or invisible texts (refusal: empty) repeat.
        key = text.strip() + "|" + json.dumps(ctx, sort_keys=True)
        if key in seen and text.strip().strip("\u200b\ufeff\u2060").strip():
            problems.append(f"{where}: duplicate of {seen[key]} (up to surrounding whitespace)")
        seen.setdefault(key, str(cid))
        problems.extend(check_expect(case["expect"], where, v2))
        cases.append(case)
    return problems, cases


def report(path: Path) -> list[str]:
    """Validate one file, print its counts; the problems found."""
    problems, cases = validate(path)
    v2 = is_v2(path)
    categories, minimum = (
        (CATEGORIES_V2, MIN_PER_CATEGORY_V2) if v2 else (CATEGORIES, MIN_PER_CATEGORY)
    )
    per = Counter((c["category"], c["lang"]) for c in cases)
    kinds = Counter(c["expect"]["kind"] for c in cases)
    print(f"{path.name} ({'v2' if v2 else 'v1'})")
    print(f"{'category':<22} {'zh':>4} {'en':>4} {'all':>4}")
    for cat in categories:
        zh, en = per[(cat, "zh")], per[(cat, "en")]
        print(f"{cat:<22} {zh:>4} {en:>4} {zh + en:>4}")
        if zh + en < minimum:
            problems.append(f"category {cat}: {zh + en} cases, at least {minimum}")
        if not zh or not en:
            problems.append(f"category {cat}: needs both languages")
    zh_all = sum(v for (_, lang), v in per.items() if lang == "zh")
    print(f"{'total':<22} {zh_all:>4} {len(cases) - zh_all:>4} {len(cases):>4}")
    if v2:
        regs = Counter((c["register"], c["lang"]) for c in cases)
        print(f"{'register':<22} {'zh':>4} {'en':>4} {'all':>4}")
        for reg in REGISTERS + ADVERSARIAL_REGISTERS:
            zh, en = regs[(reg, "zh")], regs[(reg, "en")]
            print(f"{reg:<22} {zh:>4} {en:>4} {zh + en:>4}")
            if not zh + en:
                problems.append(f"register {reg}: no case")
    print("kinds:", ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    return [f"{path.name}: {p}" for p in problems]


def main() -> int:
    here = Path(__file__).parent
    paths = [Path(a) for a in sys.argv[1:]] or [
        p for p in (here / n for n in ("cases.jsonl", "dev.jsonl", "heldout.jsonl")) if p.exists()
    ]
    problems = [p for path in paths for p in report(path)]
    for problem in problems:
        print("PROBLEM", problem)
    print("OK" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
