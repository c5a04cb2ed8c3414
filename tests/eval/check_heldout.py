"""Check the held-out eval split (issue 21, eval v2 format). Standard library only.

    python3 tests/eval/check_heldout.py [--partial] [FILE]   (default: heldout.jsonl here)

--partial skips the size and coverage minimums (for a file still being written).

Prints counts per category, language and register; exits 1 on any problem.
"""

import json
import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path

KEYS = {"id", "category", "lang", "register", "text", "context", "expect"}
CATEGORIES = [
    "status",
    "track",
    "cancel",
    "return",
    "refund",
    "address",
    "faq",
    "cant_do",
    "handoff",
    "choices",
    "clarify",
    "multi",
    "adversarial",
    "empty",
]
PLAIN_REGISTERS = [
    "plain",
    "typo",
    "run_on",
    "colloquial",
    "polite",
    "rude",
    "keyword",
    "indirect",
    "question_about_action",
    "negation",
    "multi_intent",
    "mixed_lang",
]
ADV_REGISTERS = [
    "homoglyph",
    "not_x",
    "retraction",
    "reported_speech",
    "hidden_instruction",
    "amount",
]
READS = {"get_order_status", "track_parcel"}
HIGH_RISK = {"cancel_order", "request_return", "request_refund", "change_address"}
FAQ_TOPICS = [
    "returns",
    "refund",
    "shipping",
    "cancellation",
    "delay_compensation",
    "exchange",
    "warranty",
    "payment_methods",
    "delivery_countries",
    "delivery_times",
    "cancellation_fee",
    "refund_times",
    "invoices",
    "account_help",
    "newsletter",
]
CANT_DO_TOPICS = [
    "account",
    "place_order",
    "change_items",
    "payment_change",
    "discount",
    "review",
    "complaint",
    "other",
]
ORDER_IDS = {"A1001", "A1002", "A1003", "A1004", "A1005", "A1006", "A1007", "B2001", "Z9999"}
KINDS = ["plan", "clarify", "unsupported", "handoff", "choices", "refusal"]
INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff"
HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")
MIN_TOTAL, MIN_EN, MIN_ZH, MIN_ADV = 800, 480, 320, 80


def is_empty(text):
    return not "".join(ch for ch in text if not ch.isspace() and ch not in INVISIBLE)


def check_steps(steps, where, problems):
    if not isinstance(steps, list):
        problems.append(f"{where}: steps must be a list")
        return
    if len(steps) > 4:
        problems.append(f"{where}: {len(steps)} steps, at most 4")
    seen_status, seen_policy, seen = set(), False, set()
    for i, step in enumerate(steps):
        if not isinstance(step, dict) or "tool" not in step:
            problems.append(f"{where}: step {i} is not a step object")
            continue
        tool = step["tool"]
        if tool == "search_policy":
            if set(step) != {"tool", "order_id", "topic"}:
                problems.append(f"{where}: search_policy step keys {sorted(step)}")
            if step.get("order_id") is not None:
                problems.append(f"{where}: search_policy with an order id")
            if step.get("topic") not in FAQ_TOPICS:
                problems.append(f"{where}: unknown FAQ topic {step.get('topic')!r}")
            seen_policy = True
        elif tool in READS or tool in HIGH_RISK:
            if set(step) != {"tool", "order_id"}:
                problems.append(f"{where}: {tool} step keys {sorted(step)}")
            oid = step.get("order_id")
            if oid not in ORDER_IDS:
                problems.append(f"{where}: unknown order id {oid!r}")
            if seen_policy:
                problems.append(f"{where}: order step {tool} {oid} after a policy step")
            if tool == "get_order_status":
                seen_status.add(oid)
            if tool in HIGH_RISK and oid not in seen_status:
                problems.append(f"{where}: {tool} {oid} not preceded by get_order_status {oid}")
        else:
            problems.append(f"{where}: unknown tool {tool!r}")
            continue
        key = (tool, step.get("order_id"), step.get("topic"))
        if key in seen:
            problems.append(f"{where}: duplicate step {key}")
        seen.add(key)


def check_expect(expect, where, problems):
    if not isinstance(expect, dict) or expect.get("kind") not in KINDS:
        problems.append(f"{where}: bad expect {expect!r}")
        return
    kind = expect["kind"]
    allowed = {
        "plan": {"kind", "steps"},
        "clarify": {"kind"},
        "handoff": {"kind"},
        "choices": {"kind"},
        "unsupported": {"kind", "plan_steps", "topic"},
        "refusal": {"kind", "refusal"},
    }[kind]
    if set(expect) != allowed:
        problems.append(f"{where}: expect keys {sorted(expect)}, want {sorted(allowed)}")
    if kind == "plan":
        if not expect.get("steps"):
            problems.append(f"{where}: plan without steps")
        check_steps(expect.get("steps", []), where, problems)
    elif kind == "unsupported":
        check_steps(expect.get("plan_steps", []), where, problems)
        if expect.get("topic") not in CANT_DO_TOPICS:
            problems.append(f"{where}: unknown can't-do topic {expect.get('topic')!r}")
    elif kind == "refusal" and expect.get("refusal") not in ("empty", "missing_order_id"):
        problems.append(f"{where}: bad refusal {expect.get('refusal')!r}")


def main(path):
    problems, cases = [], []
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines, 1):
        try:
            cases.append((n, json.loads(line)))
        except json.JSONDecodeError as exc:
            problems.append(f"line {n}: not JSON ({exc})")
    ids, texts = Counter(), Counter()
    for n, case in cases:
        where = f"line {n} ({case.get('id', '?')})"
        if set(case) != KEYS:
            problems.append(f"{where}: keys {sorted(case)}")
            continue
        cat, lang, reg, text = case["category"], case["lang"], case["register"], case["text"]
        if cat not in CATEGORIES:
            problems.append(f"{where}: unknown category {cat!r}")
        if lang not in ("en", "zh"):
            problems.append(f"{where}: bad lang {lang!r}")
        if reg not in PLAIN_REGISTERS + ADV_REGISTERS:
            problems.append(f"{where}: unknown register {reg!r}")
        if (cat == "adversarial") != (reg in ADV_REGISTERS):
            problems.append(f"{where}: adversarial registers belong to the adversarial category")
        m = re.fullmatch(r"ho-([a-z_]+)-(en|zh)-(\d{3})", str(case["id"]))
        if not m or m.group(1) != cat or m.group(2) != lang:
            problems.append(f"{where}: id does not match ho-<category>-<lang>-NNN")
        ids[case["id"]] += 1
        if not isinstance(text, str):
            problems.append(f"{where}: text is not a string")
            continue
        texts[unicodedata.normalize("NFC", text)] += 1
        if not is_empty(text):
            want = "zh" if HAN.search(text) else "en"
            if lang != want:
                problems.append(f"{where}: lang {lang}, text says {want}")
        ctx = case["context"]
        if ctx != {} and not (
            isinstance(ctx, dict)
            and set(ctx) == {"last_order_id"}
            and ctx["last_order_id"] in ORDER_IDS
        ):
            problems.append(f"{where}: bad context {ctx!r}")
        check_expect(case["expect"], where, problems)
        exp = case["expect"]
        if (exp.get("kind") == "refusal" and exp.get("refusal") == "empty") != is_empty(text):
            problems.append(f"{where}: refusal 'empty' iff the text is empty")
        if (cat == "empty") != is_empty(text):
            problems.append(f"{where}: category 'empty' iff the text is empty")
    for cid, k in ids.items():
        if k > 1:
            problems.append(f"id {cid} used {k} times")
    for text, k in texts.items():
        if k > 1 and not is_empty(text):
            problems.append(f"text used {k} times: {text!r}")

    valid = [c for _, c in cases if set(c) == KEYS]
    by_lang = Counter(c["lang"] for c in valid)
    # coverage: every category, register, tool, topic and kind appears
    cats = Counter(c["category"] for c in valid)
    regs = Counter(c["register"] for c in valid)
    tools, faq, cant, kinds = Counter(), Counter(), Counter(), Counter()
    for c in valid:
        e = c["expect"]
        kinds[e.get("kind")] += 1
        for s in e.get("steps", []) + e.get("plan_steps", []):
            tools[s.get("tool")] += 1
            if s.get("tool") == "search_policy":
                faq[s.get("topic")] += 1
        if e.get("kind") == "unsupported":
            cant[e.get("topic")] += 1
    for name, counter, wanted in (
        ()
        if "--partial" in sys.argv
        else (
            ("category", cats, CATEGORIES),
            ("register", regs, PLAIN_REGISTERS + ADV_REGISTERS),
            ("tool", tools, sorted(READS | HIGH_RISK | {"search_policy"})),
            ("FAQ topic", faq, FAQ_TOPICS),
            ("can't-do topic", cant, CANT_DO_TOPICS),
            ("kind", kinds, KINDS),
        )
    ):
        for w in wanted:
            if not counter[w]:
                problems.append(f"coverage: no case with {name} {w!r}")
    if "--partial" not in sys.argv:
        if len(valid) < MIN_TOTAL:
            problems.append(f"{len(valid)} cases, want at least {MIN_TOTAL}")
        if by_lang["en"] < MIN_EN or by_lang["zh"] < MIN_ZH:
            problems.append(f"en {by_lang['en']} / zh {by_lang['zh']}, want {MIN_EN} / {MIN_ZH}")
        if cats["adversarial"] < MIN_ADV:
            problems.append(f"{cats['adversarial']} adversarial cases, want {MIN_ADV}")

    print(f"{len(valid)} cases: en {by_lang['en']}, zh {by_lang['zh']}")
    print("\ncategory          en   zh")
    for cat in CATEGORIES:
        print(
            f"{cat:15} {sum(1 for c in valid if c['category'] == cat and c['lang'] == 'en'):4} "
            f"{sum(1 for c in valid if c['category'] == cat and c['lang'] == 'zh'):4}"
        )
    print("\nregister                 en   zh")
    for reg in PLAIN_REGISTERS + ADV_REGISTERS:
        print(
            f"{reg:22} {sum(1 for c in valid if c['register'] == reg and c['lang'] == 'en'):4} "
            f"{sum(1 for c in valid if c['register'] == reg and c['lang'] == 'zh'):4}"
        )
    print("\nexpect kinds: " + ", ".join(f"{k} {kinds[k]}" for k in KINDS))
    print("FAQ topics: " + ", ".join(f"{t} {faq[t]}" for t in FAQ_TOPICS))
    print("can't-do topics: " + ", ".join(f"{t} {cant[t]}" for t in CANT_DO_TOPICS))
    if problems:
        print(f"\n{len(problems)} problem(s):")
        for p in problems:
            print("  " + p)
        return 1
    print("\nOK")
    return 0


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    sys.exit(main(args[0] if args else Path(__file__).with_name("heldout.jsonl")))
