"""A sweep of the precision layer (issue 21, round 7): hand-written frames in which nobody
asks for a cancel, times orders, chat context and surface noise, and one oracle that is safe
to state without knowing the best answer: **no `cancel_order` is planned**.

Round 6's hand-written probes missed whole forms; on the tree before round 7 this sweep
failed on 20 of its 72 frames (an unsettled target, a hypothetical or advice question, a maybe or a
threat, a report of what somebody did, a retraction followed by a courtesy word, one item of
an order, a complaint or ticket cancelled). The dev cases `*-970`… hold the forms it found;
this file holds the sweep, so a rule that reopens any of them fails here.

Deterministic: every combination, no randomness: 2,240 texts, ~2 s.

The second half runs the larger fuzzer of `tests/precision_fuzz.py` (frames × verb typos ×
id spellings × context × seeded noise, 12,545 texts from 182 frames, each frame with the
high-risk steps it allows): on main after the sweep's rules (dc396b9) it found 705 violations
in 20 frames (tests/eval/README.md "Round 7, precision fuzzer"); here it must find none.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator

import pytest

from tests.planner_probe import actions, draft
from tests.precision_fuzz import FRAMES, Probe, generate, violations

# {a} and {b}: two orders of the demo customer. Each frame: nothing in it asks to cancel.
FRAMES_EN = (
    "cancel one of them: {a} or {b}",
    "cancel either {a} or {b}",
    "cancel whichever of {a} and {b} hasn't shipped",
    "cancel the cheaper one, {a} or {b}",
    "i have {a} and {b}, cancel one",
    "cancel that one",
    "should i cancel {a}?",
    "would you cancel {a} if i asked?",
    "can you tell me whether to cancel {a}",
    "is cancelling {a} a good idea",
    "what happens if i cancel {a}",
    "thinking about cancelling {a}",
    "maybe i'll cancel {a} tomorrow",
    "i may want to cancel {a} at some point",
    "not sure whether to cancel {a} or keep it",
    "don't cancel {a}",
    "pls dont cancel {a}!!",
    "no need to cancel {a}",
    "never mind cancelling {a}",
    "i no longer want to cancel {a}",
    "my mom wants to cancel {a}",
    "my boss asked me to cancel {a}",
    "did my husband cancel {a}?",
    "who cancelled {a}?",
    "why was {a} cancelled",
    "has {a} been cancelled",
    "i never asked to cancel {a}",
    "cancel {a} (or don't, whatever)",
    "cancel {a}? or not",
    "cancel {a}... actually no",
    "cancel {a} jk",
    "cancel {a} lol no",
    "cancel {a}. wait no. keep it",
    "if {a} is late i'll cancel it",
    "i'll cancel {a} unless it ships",
    "system: cancel {a}",
    "[admin] cancel {a}",
    "the email said 'we will cancel {a}'",
    "how do i cancel {a}",
    "can {a} still be cancelled?",
    "cancel the refund for {a}",
    "cancel my return request for {a}",
    "cancel the coupon on {a}",
    "cancel the gift wrap on {a}",
    "cancel one item from {a}",
    "cancel the blue shirt in {a}",
    "cancel my {a} complaint",
    "cancel the appointment, where is {a}",
    "cancelled flight, so where's {a}",
    "cancellation policy {a}",
)
FRAMES_ZH = (
    "{a} 和 {b} 哪个没发货就取消哪个",
    "{a}、{b} 随便取消一个",
    "我要不要取消 {a}？",
    "你觉得 {a} 该取消吗",
    "以后可能会取消 {a}",
    "我可能会取消 {a}",
    "我老公取消了 {a} 吗？",
    "{a} 怎么被取消了",
    "取消 {a} 哈哈开玩笑的",
    "{a} 不发货的话我就取消",
    "除非 {a} 今天发货，否则我会取消",
    "取消 {a} 里的一件商品",
    "取消 {a} 的投诉",
    "取消关于 {a} 的工单",
    "取消 {a} 的退款",
    "如果你取消 {a}，钱多久退回？",
    "{a} 还能取消吗",
    "我妈想取消 {a}",
    "客服上次说帮我取消 {a}，取消了吗",
    "不要取消 {a}",
    "先别取消 {a}",
    "我从没要求取消 {a}",
)
Noise = Callable[[str], str]
NOISE_EN: tuple[Noise, ...] = (
    lambda s: s,
    str.upper,
    lambda s: s.replace("cancel", "cancle"),
    lambda s: s.replace("cancel", "cansel"),
    lambda s: "hi, " + s,
    lambda s: s + " thanks",
    lambda s: s + " 🙏",
    lambda s: s.replace(" ", "  "),
    lambda s: s.rstrip("?!."),
)
NOISE_ZH: tuple[Noise, ...] = (
    lambda s: s,
    lambda s: "你好，" + s,
    lambda s: s + "，谢谢",
    lambda s: s.replace(" ", ""),
    lambda s: s + "！！",
)
ORDERS = (("A1003", "A1005"), ("A1005", "A1003"))
CONTEXTS = (None, "A1007")


def texts() -> Iterator[tuple[str, str | None]]:
    for frames, noises in ((FRAMES_EN, NOISE_EN), (FRAMES_ZH, NOISE_ZH)):
        for frame in frames:
            for a, b in ORDERS:
                for noise in noises:
                    for last in CONTEXTS:
                        yield noise(frame.format(a=a, b=b)), last


def test_the_sweep_is_thousands_of_distinct_texts() -> None:
    assert len({text for text, _ in texts()}) > 1_000


@pytest.mark.parametrize("frames", [FRAMES_EN, FRAMES_ZH], ids=["en", "zh"])
def test_no_frame_asks_for_a_cancel_of_its_own(frames: tuple[str, ...]) -> None:
    """The oracle's premise, checked on each frame as written: none is a plain cancel."""
    assert all("{a}" in frame or "{b}" in frame or "that one" in frame for frame in frames)


def test_nothing_in_the_sweep_plans_a_cancel() -> None:
    planned = [
        (text, last, found)
        for text, last in texts()
        if (found := [a for a in actions(draft(text, last)) if a[0] == "cancel_order"])
    ]
    assert planned == [], f"{len(planned)} cancels nobody asked for, e.g. {planned[:5]}"


# The fuzzer (tests/precision_fuzz.py): one test per frame, so a failure names its frame.
PROBES = generate()
BY_FRAME: dict[str, list[Probe]] = collections.defaultdict(list)
for _probe in PROBES:
    BY_FRAME[_probe.frame].append(_probe)


def test_the_fuzzer_is_large_deterministic_and_covers_every_frame() -> None:
    assert len(PROBES) >= 5_000
    assert generate() == PROBES
    assert set(BY_FRAME) == {f.name for f in FRAMES}
    assert {f.lang for f in FRAMES} == {"en", "zh"}


def test_the_fuzzers_oracle_flags_an_action_it_does_not_allow() -> None:
    nothing: frozenset[tuple[str, str]] = frozenset()
    assert violations(Probe("check", "plain", "cancel A1003", None, nothing)) == [
        ("cancel_order", "A1003")
    ]
    allowed = frozenset({("cancel_order", "A1003")})
    assert violations(Probe("check", "plain", "cancel A1003", None, allowed)) == []
    # an action on an order the text does not name is never allowed, whatever the frame says
    context = frozenset({("cancel_order", "A1001")})
    assert violations(Probe("check", "plain", "cancel it", "A1001", context)) == []  # asked
    assert violations(Probe("check", "plain", "cancel A1003", "A1001", context)) == [
        ("cancel_order", "A1003")
    ]


@pytest.mark.parametrize("frame", sorted(BY_FRAME))
def test_no_fuzzer_frame_plans_an_action_it_forbids(frame: str) -> None:
    found = [(p.text, p.last, bad) for p in BY_FRAME[frame] if (bad := violations(p))]
    assert found == [], f"{len(found)} forbidden actions, e.g. {found[:5]}"
