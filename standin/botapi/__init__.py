"""The Telegram Bot API specification, as data, and a checker for calls and objects.

Real Telegram is the reference, not our stand-in. `api.min.json` beside this file is the
machine-readable Bot API spec scraped from core.telegram.org by PaulSonOfLars/telegram-bot-
api-spec (MIT, see LICENSE and README.md here for the version). It is vendored, never fetched
at run or test time, and lives inside `standin` because the stand-in enforces it at run time
(also in `stepwise demo`, where no tests/ directory exists); `tests/botapi` re-exports it.

Three questions are answered:
- `check_call(method, params)`: is this request one Telegram accepts as to its shape —
  known method, known parameter names, required ones present, each value of a declared
  type (and, for strings with a closed set of values, one of them)?
- `check_object(type_name, value)`: is this object (what the stand-in returns, what the
  test API injects) shaped like the spec's type? Unknown fields count: Telegram never
  sends a field its spec does not have.
- `check_result(method, value)`: is this the type the method is documented to return?

Parameters arrive the way Telegram reads them: query string, form fields or JSON, and a
form field carrying a non-string value holds its JSON encoding (`chat_id=42`,
`reply_markup={"inline_keyboard": …}`), so a string is decoded as JSON where the declared
type is not `String`; and since Telegram reads every top-level parameter as text, a number
is a valid top-level `String`. Values inside JSON objects are typed strictly, as Telegram's
JSON parser types them. Each problem is a `Problem` (structured, so the stand-in can word it
as Telegram does); `check_*` return them as one line each, [] when all conforms.

One idea at a little over 400 lines: the spec's type system (scalars, arrays, objects,
unions, closed string sets) as one recursive checker; its parts mean nothing apart.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

SPEC_PATH = Path(__file__).with_name("api.min.json")

ProblemKind = Literal[
    "unknown_method", "unknown_parameter", "missing", "type", "enum", "unknown_field"
]


@dataclass(frozen=True)
class Problem:
    """One way a call or object differs from the spec.

    `where` is the dotted path (`sendMessage.reply_markup.inline_keyboard[0][0].text`),
    `parameter` the top-level parameter or field it is under, `field` the innermost field
    name, `owner` the method or type that declares that field, `expected` the declared
    type(s) for type problems.
    """

    where: str
    kind: ProblemKind
    detail: str
    parameter: str = ""
    field: str = ""
    expected: str = ""
    owner: str = ""

    @property
    def nested(self) -> bool:
        """Whether the problem is inside a JSON object or array, not a top-level value."""
        return self.where.count(".") > 1 or "[" in self.where

    def __str__(self) -> str:
        return f"{self.where}: {self.detail}"


# Closed value sets the spec states in prose that the quoted-word extraction below misses
# (unquoted lists, values defined on another page: "formatting options", or a list that
# is the set of Update fields).
_SUPPLEMENTED_ENUMS: dict[tuple[str, str], frozenset[str]] = {
    ("*", "parse_mode"): frozenset({"HTML", "MarkdownV2", "Markdown"}),
    ("sendChatAction", "action"): frozenset(
        {
            "typing",
            "upload_photo",
            "record_video",
            "upload_video",
            "record_voice",
            "upload_voice",
            "upload_document",
            "choose_sticker",
            "find_location",
            "record_video_note",
            "upload_video_note",
        }
    ),
}
# Telegram lower-cases these before comparing ("html" works like "HTML").
_CASE_INSENSITIVE = frozenset({"parse_mode"})
_ENUM_PHRASE = re.compile(
    r"(?:can be(?: either| one of)?|must be(?: one of)?|always|(?:currently,? )?one of)"
    r"\s+[\"“]",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"[\"“]([A-Za-z0-9_]+)[\"”]")
_BARE_MUST_BE = re.compile(r"\bmust be ([a-z0-9_]+)$")
_DISCRIMINATORS = ("type", "status", "source")


@functools.cache
def spec() -> dict[str, Any]:
    """The parsed specification (read once)."""
    data: dict[str, Any] = json.loads(SPEC_PATH.read_text(encoding="utf-8"))
    return data


def version() -> str:
    """The Bot API version the vendored spec describes, e.g. "Bot API 10.1"."""
    return str(spec()["version"])


def update_kinds() -> frozenset[str]:
    """The Update fields a bot can receive (what `allowed_updates` may name)."""
    return frozenset(_fields("types", "Update")) - {"update_id"}


@functools.cache
def _fields(section: str, name: str) -> dict[str, dict[str, Any]]:
    entry = spec()[section][name]
    return {f["name"]: f for f in entry.get("fields", [])}


@functools.cache
def _method(method: str) -> dict[str, Any] | None:
    """A method's spec entry; method names are case-insensitive in Telegram."""
    methods: dict[str, Any] = spec()["methods"]
    found = methods.get(method)
    if found is None:
        found = next((m for name, m in methods.items() if name.lower() == method.lower()), None)
    return found


@functools.cache
def _enum(owner: str, name: str) -> frozenset[str] | None:
    """The closed set of values a String field may take, when the spec states one."""
    for key in ((owner, name), ("*", name)):
        if key in _SUPPLEMENTED_ENUMS:
            return _SUPPLEMENTED_ENUMS[key]
    section = "methods" if owner in spec()["methods"] else "types"
    field = _fields(section, owner)[name]
    if name == "allowed_updates":
        return update_kinds()
    if field["types"] != ["String"]:
        return None
    description = str(field["description"])
    bare = _BARE_MUST_BE.search(description.strip())
    if bare:  # BotCommandScope*: "Scope type, must be default"
        return frozenset({bare[1]})
    match = _ENUM_PHRASE.search(description)
    if match is None:
        return None
    # Only the values in the sentence that states the set (later sentences quote examples).
    sentence = description[match.start() :].split(". ")[0]
    values = frozenset(_QUOTED.findall(sentence))
    return values or None


def call_problems(method: str, params: Mapping[str, Any]) -> list[Problem]:
    """Every way one Bot API request differs from the spec."""
    found = _method(method)
    if found is None:
        return [Problem(method, "unknown_method", "no such Bot API method")]
    name = str(found["name"])
    fields = _fields("methods", name)
    problems = [
        Problem(
            f"{method}.{key}",
            "unknown_parameter",
            f"not a parameter of {name}",
            key,
            key,
            owner=name,
        )
        for key in params
        if key not in fields
    ]
    for key, field in fields.items():
        value = params.get(key)
        where = f"{method}.{key}"
        if value is None or (value == "" and not _empty_allowed(name, key)):
            if field["required"]:
                problems.append(
                    Problem(where, "missing", "required but missing", key, key, owner=name)
                )
            continue
        context = _Context(owner=name, parameter=key, top_level=True)
        problems += context.any_of(where, key, field["types"], value)
    return problems


def object_problems(type_name: str, value: Any) -> list[Problem]:
    """Every way one object differs from the spec's type `type_name`."""
    return _Context(owner=type_name, parameter="", top_level=False).typed(
        type_name, type_name, value
    )


def check_call(method: str, params: Mapping[str, Any]) -> list[str]:
    """Problems with one Bot API request, or [] when Telegram would accept its shape."""
    return [str(problem) for problem in call_problems(method, params)]


def check_object(type_name: str, value: Any) -> list[str]:
    """Problems with one object of a Bot API type, or [] when it conforms."""
    return [str(problem) for problem in object_problems(type_name, value)]


def check_result(method: str, value: Any) -> list[str]:
    """Problems with a method's successful `result`, against its documented return type."""
    found = _method(method)
    if found is None:
        return [f"{method}: no such Bot API method"]
    context = _Context(owner=str(found["name"]), parameter="result", top_level=False)
    problems = context.any_of(f"{method}->result", "result", found["returns"], value)
    return [str(problem) for problem in problems]


def _empty_allowed(method: str, parameter: str) -> bool:
    """setWebhook's url is required, and "" is its documented "remove the webhook" value."""
    return (method, parameter) == ("setWebhook", "url")


@dataclass(frozen=True)
class _Context:
    """Where a value sits: whose field, under which parameter, and whether at top level."""

    owner: str
    parameter: str
    top_level: bool

    def inner(self, owner: str) -> _Context:
        return _Context(owner, self.parameter, top_level=False)

    def any_of(self, where: str, field: str, types: list[str], value: Any) -> list[Problem]:
        """`value` against any of the declared `types`; the closest miss is reported."""
        best: list[Problem] | None = None
        shallow = True  # every type missed at this very value, not somewhere inside it
        for declared in types:
            problems = self.declared(where, field, declared, value)
            if not problems:
                return []
            shallow = shallow and len(problems) == 1 and problems[0].where == where
            if best is None or len(problems) < len(best):
                best = problems
        if len(types) > 1 and shallow and best is not None and best[0].kind == "type":
            expected = " or ".join(types)
            return [
                self.problem(
                    where, "type", f"expected {expected}, got {_shown(value)}", field, expected
                )
            ]
        return best or []

    def problem(
        self, where: str, kind: ProblemKind, detail: str, field: str, expected: str = ""
    ) -> Problem:
        return Problem(where, kind, detail, self.parameter or field, field, expected, self.owner)

    def declared(self, where: str, field: str, declared: str, value: Any) -> list[Problem]:
        decoded = _decode(value) if self.top_level and declared != "String" else value
        if declared.startswith("Array of "):
            if not isinstance(decoded, list):
                return [
                    self.problem(
                        where, "type", f"expected an array, got {_shown(value)}", field, declared
                    )
                ]
            inner = declared.removeprefix("Array of ")
            element = _Context(self.owner, self.parameter, top_level=False)
            problems: list[Problem] = []
            for index, item in enumerate(decoded):
                problems += element.declared(f"{where}[{index}]", field, inner, item)
            return problems
        if declared == "String":
            return self.string(where, field, value)
        if declared in ("Integer", "Float", "Boolean", "True"):
            if _is_scalar(declared, decoded):
                return []
            return [
                self.problem(
                    where, "type", f"expected {declared}, got {_shown(value)}", field, declared
                )
            ]
        if declared == "InputFile":  # an upload or a file_id/URL string; nothing to check
            return []
        return self.inner(declared).typed(where, declared, decoded)

    def string(self, where: str, field: str, value: Any) -> list[Problem]:
        textual = isinstance(value, str) or (
            self.top_level and isinstance(value, int | float) and not isinstance(value, bool)
        )
        if not textual:
            return [
                self.problem(
                    where, "type", f"expected String, got {_shown(value)}", field, "String"
                )
            ]
        enum = _enum(self.owner, field) if field in _fields_of(self.owner) else None
        if enum is None:
            return []
        text = str(value)
        allowed = enum
        if field in _CASE_INSENSITIVE:
            text, allowed = text.lower(), frozenset(v.lower() for v in enum)
        if text in allowed:
            return []
        return [self.problem(where, "enum", f"{text!r} is not one of {sorted(enum)}", field)]

    def typed(self, where: str, type_name: str, value: Any) -> list[Problem]:
        """`value` as an object of `type_name` (a union is valid as any one member)."""
        types: dict[str, Any] = spec()["types"]
        kind = types.get(type_name)
        if kind is None:
            return [self.problem(where, "type", f"unknown type {type_name}", type_name)]
        if "subtypes" in kind:
            return self._union(where, type_name, kind["subtypes"], value)
        if not isinstance(value, dict):
            return [
                self.problem(
                    where,
                    "type",
                    f"expected a {type_name} object, got {_shown(value)}",
                    _last(where),
                    type_name,
                )
            ]
        fields = _fields("types", type_name)
        context = self.inner(type_name)
        problems = [
            context.problem(f"{where}.{name}", "unknown_field", f"not a field of {type_name}", name)
            for name in value
            if name not in fields
        ]
        for name, field in fields.items():
            if name not in value:
                if field["required"]:
                    problems.append(
                        context.problem(
                            f"{where}.{name}",
                            "missing",
                            f"required field of {type_name} missing",
                            name,
                        )
                    )
                continue
            problems += context.any_of(f"{where}.{name}", name, field["types"], value[name])
        return problems

    def _union(self, where: str, type_name: str, members: list[str], value: Any) -> list[Problem]:
        chosen = _member_by_discriminator(members, value)
        candidates = [chosen] if chosen is not None else members
        best: list[Problem] | None = None
        for member in candidates:
            problems = self.typed(where, member, value)
            if not problems:
                return []
            if best is None or len(problems) < len(best):
                best = problems
        return best or [
            self.problem(
                where, "type", f"matches no member of {type_name}", _last(where), type_name
            )
        ]


def _fields_of(owner: str) -> dict[str, dict[str, Any]]:
    section = "methods" if owner in spec()["methods"] else "types"
    if owner not in spec()[section]:
        return {}
    return _fields(section, owner)


def _member_by_discriminator(members: list[str], value: Any) -> str | None:
    """The union member whose one-value `type`/`status`/`source` field matches `value`'s."""
    if not isinstance(value, dict):
        return None
    for key in _DISCRIMINATORS:
        wanted = value.get(key)
        if not isinstance(wanted, str):
            continue
        for member in members:
            fields = _fields("types", member) if "subtypes" not in spec()["types"][member] else {}
            if key in fields and _enum(member, key) == frozenset({wanted}):
                return member
    return None


def _is_scalar(declared: str, value: Any) -> bool:
    if isinstance(value, bool):
        return declared in ("Boolean", "True") and (value or declared == "Boolean")
    if declared == "Integer":
        return isinstance(value, int)
    if declared == "Float":
        return isinstance(value, int | float)
    return False


def _decode(value: Any) -> Any:
    """A form field's JSON value ("42", "true", "[...]"); other strings stay as they are."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _last(where: str) -> str:
    return where.rsplit(".", 1)[-1].split("[", 1)[0]
