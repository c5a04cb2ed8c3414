"""Button data: small, self-describing, and safe to receive from anyone.

Everything a button needs is in its data (no in-memory cache), so buttons keep working
after a restart. A confirm button carries the run id and the pause's random nonce; the
store checks both, so forged or outdated data cannot approve anything. Parsing never
raises: anything unexpected is simply `None`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent_core.models import RunStatus

MAX_CALLBACK_BYTES = 64  # Telegram's limit for callback_data

_DECISION = re.compile(
    r"^sw:(?P<verb>[cx]):(?P<run>[0-9a-f]{6,32}):(?P<nonce>[A-Za-z0-9_-]{4,24})$"
)
_CHOICE = re.compile(
    r"^sw:o:(?P<run>[0-9a-f]{6,32}):(?P<nonce>[A-Za-z0-9_-]{4,24}):(?P<option>[0-3])$"
)
_PAGE = re.compile(r"^sw:p:(?P<status>[a-z]{1,12}|\*):(?P<offset>[0-9]{1,7})$")
# "Talk to a person" under an answer (the run it followed), and Close on a handoff's header
# in the staff group (the handoff's random id). Who may press is checked on the press: the
# run's own customer, a staff member.
# A staff member's reject with its preset reason (issue 14 item 6): l(imit), d(ocuments),
# p(olicy), n(one).
_REASON = re.compile(
    r"^sw:r:(?P<run>[0-9a-f]{6,32}):(?P<nonce>[A-Za-z0-9_-]{4,24}):(?P<reason>[ldpn])$"
)
REJECT_REASONS = ("l", "d", "p", "n")
_PERSON = re.compile(r"^sw:h:(?P<run>[0-9a-f]{6,32})$")
_CLOSE_HANDOFF = re.compile(r"^sw:hc:(?P<handoff>[0-9a-f]{6,32})$")


@dataclass(frozen=True)
class DecisionData:
    run_id: str
    nonce: str
    approved: bool
    reason: str | None = None  # a staff reject's preset reason (`REJECT_REASONS`)


@dataclass(frozen=True)
class ChoiceData:
    """An option of a clarifying question (issue 13): honoured once, only for the asker."""

    run_id: str
    nonce: str
    option: int  # 0-based


@dataclass(frozen=True)
class PageData:
    status: RunStatus | None
    offset: int


@dataclass(frozen=True)
class PersonData:
    run_id: str


@dataclass(frozen=True)
class CloseHandoffData:
    handoff_id: str


def reason_data(run_id: str, nonce: str, reason: str) -> str:
    data = f"sw:r:{run_id}:{nonce}:{reason}"
    if len(data.encode()) > MAX_CALLBACK_BYTES or not _REASON.fullmatch(data):
        raise ValueError("run id, nonce or reason does not fit in callback data")
    return data


def person_data(run_id: str) -> str:
    data = f"sw:h:{run_id}"
    if not _PERSON.fullmatch(data):
        raise ValueError("run id does not fit in callback data")
    return data


def close_handoff_data(handoff_id: str) -> str:
    data = f"sw:hc:{handoff_id}"
    if not _CLOSE_HANDOFF.fullmatch(data):
        raise ValueError("handoff id does not fit in callback data")
    return data


def decision_data(run_id: str, nonce: str, approved: bool) -> str:
    data = f"sw:{'c' if approved else 'x'}:{run_id}:{nonce}"
    if len(data.encode()) > MAX_CALLBACK_BYTES or not _DECISION.fullmatch(data):
        raise ValueError("run id or nonce does not fit in callback data")
    return data


def choice_data(run_id: str, nonce: str, option: int) -> str:
    data = f"sw:o:{run_id}:{nonce}:{option}"
    if len(data.encode()) > MAX_CALLBACK_BYTES or not _CHOICE.fullmatch(data):
        raise ValueError("run id, nonce or option does not fit in callback data")
    return data


def page_data(status: RunStatus | None, offset: int) -> str:
    return f"sw:p:{status.value if status else '*'}:{max(0, offset)}"


def parse_callback(
    data: object,
) -> DecisionData | ChoiceData | PageData | PersonData | CloseHandoffData | None:
    if not isinstance(data, str) or len(data) > MAX_CALLBACK_BYTES:
        return None
    # fullmatch, not match: "$" also matches before a trailing newline.
    if match := _DECISION.fullmatch(data):
        return DecisionData(match["run"], match["nonce"], approved=match["verb"] == "c")
    if match := _CHOICE.fullmatch(data):
        return ChoiceData(match["run"], match["nonce"], int(match["option"]))
    if match := _REASON.fullmatch(data):
        return DecisionData(match["run"], match["nonce"], approved=False, reason=match["reason"])
    if match := _PERSON.fullmatch(data):
        return PersonData(match["run"])
    if match := _CLOSE_HANDOFF.fullmatch(data):
        return CloseHandoffData(match["handoff"])
    if match := _PAGE.fullmatch(data):
        status = match["status"]
        if status == "*":
            return PageData(None, int(match["offset"]))
        if status in RunStatus.__members__.values():
            return PageData(RunStatus(status), int(match["offset"]))
    return None
