"""The intent inventory as data: `intents.toml` next to this module, extended by a shop.

Each intent has a kind (a catalog tool, an FAQ topic, a can't-do topic, the request for a
person, or asking what the bot can do), a label for a button, and example requests in
English and Chinese that recognition generalises from. A shop's own file (the same tables,
`STEPWISE_INTENTS`) adds examples to an intent of the same name or declares a new one; an
invalid file is refused with the problem, never half-loaded.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

BUILT_IN = Path(__file__).with_name("intents.toml")


class Kind(StrEnum):
    TOOL = "tool"
    FAQ = "faq"
    CANT_DO = "cant_do"
    HANDOFF = "handoff"
    MENU = "menu"


class Texts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    en: str = Field(min_length=1, max_length=200)
    zh: str = Field(min_length=1, max_length=200)


class Examples(BaseModel):
    model_config = ConfigDict(extra="forbid")

    en: list[str] = Field(default_factory=list)
    zh: list[str] = Field(default_factory=list)


class IntentDef(BaseModel):
    """One thing a customer may want. `name` is the tool (tools), the topic (FAQ, can't-do),
    or "handoff" / "menu"."""

    model_config = ConfigDict(extra="forbid")

    kind: Kind
    name: str
    label: Texts | None = None  # the button that offers it ("Track an order")
    description: str = ""
    option: Texts | None = None  # what the button sends, as if the customer wrote it
    query: Texts | None = None  # FAQ: the search_policy query that finds its answer
    cant_name: Texts | None = None  # can't-do: how the answer names it
    offer: str = "person"  # can't-do: the way forward offered ("person" or "none")
    examples: Examples = Field(default_factory=Examples)

    @property
    def key(self) -> str:
        return f"{self.kind.value}:{self.name}"


class IntentsFileError(ValueError):
    """A shop's intents file that cannot be used (the message says why)."""


_SECTIONS = {"tools": Kind.TOOL, "faq": Kind.FAQ, "cant_do": Kind.CANT_DO}


def parse(data: Mapping[str, Any]) -> list[IntentDef]:
    """Intents from one TOML document (already parsed)."""
    found: list[IntentDef] = []
    unknown = set(data) - {*_SECTIONS, "handoff", "menu", "intents"}
    if unknown:
        raise IntentsFileError(f"unknown tables: {', '.join(sorted(unknown))}")
    for section, kind in _SECTIONS.items():
        for name, body in (data.get(section) or {}).items():
            found.append(_one(kind, name, body))
    for name, kind in (("handoff", Kind.HANDOFF), ("menu", Kind.MENU)):
        if name in data:
            found.append(_one(kind, name, data[name]))
    return found


def _one(kind: Kind, name: str, body: Mapping[str, Any]) -> IntentDef:
    fields = dict(body)
    if "name" in fields:
        fields["cant_name"] = fields.pop("name")
    try:
        return IntentDef(kind=kind, name=name, **fields)
    except (ValidationError, TypeError) as exc:
        raise IntentsFileError(f"[{kind.value}.{name}]: {exc}") from exc


def merge(base: Iterable[IntentDef], extra: Iterable[IntentDef]) -> list[IntentDef]:
    """`extra` adds examples to intents of the same kind and name, or new intents."""
    merged = {i.key: i for i in base}
    for intent in extra:
        old = merged.get(intent.key)
        if old is None:
            merged[intent.key] = intent
            continue
        examples = Examples(
            en=[*old.examples.en, *intent.examples.en],
            zh=[*old.examples.zh, *intent.examples.zh],
        )
        updates = {
            k: v for k, v in intent.model_dump(exclude={"examples"}).items() if v is not None
        }
        merged[intent.key] = old.model_copy(update={**updates, "examples": examples})
    return list(merged.values())


def load(path: Path | str | None = None) -> list[IntentDef]:
    """The built-in intents, extended by the shop's file at `path` if given."""
    intents = parse(tomllib.loads(BUILT_IN.read_text(encoding="utf-8")))
    if path is None:
        return intents
    try:
        text = Path(path).read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise IntentsFileError(f"cannot read intents file {path}: {exc}") from exc
    extra = parse(data)
    for intent in extra:
        if (
            intent.kind is Kind.FAQ
            and intent.query is None
            and intent.key not in {i.key for i in intents}
        ):
            raise IntentsFileError(f"[faq.{intent.name}] needs a query (how its policy is found)")
    return merge(intents, extra)
