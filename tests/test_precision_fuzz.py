"""The precision layer swept (issue 21, round 7): the fuzzer of `tests/precision_fuzz.py`
composes hand-written frames in which nobody clearly asks for an action with verb typos, id
spellings, a chat context order or none, and seeded surface noise; each frame declares the
only high-risk steps it allows (usually none), and no action may target an order the text
does not name. A rule that reopens any form fails here, named by its frame.

Its frames came in two batches: round 7a's first sweep (`sweep_*`, 72 frames: on the tree
before round 7, 20 of them planned a cancel; the dev cases `*-970`… hold those forms) and
round 7b's 182 (on the tree after 7a, 705 violations in 20 frames; dev cases `*-6xx`). See
tests/eval/README.md, "Round 7a" and "Round 7b".
"""

from __future__ import annotations

import collections

import pytest

from tests.precision_fuzz import FRAMES, Probe, generate, violations

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
