"""What a tool's result must be before anyone sees it: its contract, emptiness, bounds.

Every backend's result goes through here (`ToolRegistry.call`), so the demo shop, an HTTP
API and a TOML-declared tool keep the same promises:

- `check_result`: the catalog's result contract (`ToolSpec.result_model`). A result that
  breaks it is `ContractBroken`, named by field path (`events.0.at: Field required`),
  never by the offending value (an upstream may echo a secret). The executor reports it
  as `internal`.
- `is_empty`: nothing usable (`null`, `[]`, `{}`, `{"results": []}`, or the spec's
  `empty_field` empty) is `empty_result`, which the policy degrades honestly.
- `bound`: every value that may reach a customer has a sane size. Strings longer than
  their field's bound (the spec's `bounds`, else `DEFAULT_CHARS`) are clipped, lists keep
  their first `MAX_ITEMS`, and each clip is described in a note the executor records on
  the run. A 40,000-character `eta` becomes 40 characters and a notice for staff.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from agent_core.catalog.spec import ToolSpec

# A broken answer of 10 000 entries is named by its first few problems, not all of them.
MAX_PROBLEMS: Final = 3
DEFAULT_CHARS: Final = 300
MAX_ITEMS: Final = 20
MAX_KEYS: Final = 50
MAX_DEPTH: Final = 6
MAX_NOTES: Final = 5
_NESTED: Final = (dict, list)  # a tuple: `dict | list` would build a union per call


class ContractBroken(Exception):
    """A result that does not keep its tool's contract; `str()` names the field(s)."""


def describe(exc: ValidationError, limit: int = MAX_PROBLEMS) -> str:
    """`field.path: message; ...` for the first `limit` problems, never the input values."""
    errors = exc.errors(include_url=False, include_input=False)
    parts = []
    for err in errors[:limit]:
        where = ".".join(str(p) for p in err["loc"]) or "response"
        parts.append(f"{where}: {err['msg']}")
    if len(errors) > limit:
        parts.append(f"and {len(errors) - limit} more")
    return "; ".join(parts)


@lru_cache(maxsize=256)
def _list_of(model: type[BaseModel]) -> type[BaseModel]:
    # `{"results": [...]}`, so a bad entry is always named `results.N.field`.
    wrapper: type[BaseModel] = create_model(
        f"{model.__name__}List",
        __config__=ConfigDict(strict=True, extra="ignore"),
        results=(list[model], ...),  # type: ignore[valid-type]
    )
    return wrapper


def check_result(spec: ToolSpec, data: Any) -> Any:
    """The tool's result checked against its contract; `ContractBroken` if it breaks it.

    A dict result passes through as the backend sent it (extra fields included); a list
    result comes back as the list of its entries as the contract reads them.
    """
    model = spec.result_model
    if model is None:
        return data
    try:
        if spec.result_is_list:
            wrapped = data if isinstance(data, dict) else {"results": data}
            entries = _list_of(model).model_validate(wrapped).results  # type: ignore[attr-defined]
            return [entry.model_dump(mode="json") for entry in entries]
        model.model_validate(data)
    except ValidationError as exc:
        raise ContractBroken(describe(exc)) from None
    except RecursionError:
        raise ContractBroken("response: nested too deeply") from None
    return data


def is_empty(spec: ToolSpec | None, data: Any) -> bool:
    """Nothing usable: `null`, `[]`, `{}`, `{"results": []}`, or `empty_field` empty."""
    if data is None or data == [] or data == {}:
        return True
    if isinstance(data, dict) and data.get("results") == []:
        return True
    field = spec.empty_field if spec is not None else None
    return field is not None and isinstance(data, dict) and not data.get(field)


def bound(data: Any, bounds: Mapping[str, int] | None = None) -> tuple[Any, tuple[str, ...]]:
    """`data` with every string, list and dict cut to its bound, and a note per cut."""
    bounds = bounds or {}
    if _within(data, bounds, DEFAULT_CHARS, 0):
        return data, ()  # the usual case: nothing to cut, nothing copied
    notes: list[str] = []
    clipped = _bound(data, bounds, (), DEFAULT_CHARS, 0, notes)
    if len(notes) > MAX_NOTES:
        notes = [*notes[:MAX_NOTES], f"and {len(notes) - MAX_NOTES} more values clipped"]
    return clipped, tuple(notes)


def _within(value: Any, bounds: Mapping[str, int], limit: int, depth: int) -> bool:
    """Whether `value` keeps every bound (a read-only pass, cheaper than cutting).

    Runs on every result, so strings (nearly every value) are checked in the loop rather
    than by a call each."""
    if isinstance(value, str):
        return len(value) <= limit
    if isinstance(value, dict):
        if depth >= MAX_DEPTH or len(value) > MAX_KEYS:
            return False
        for key, item in value.items():
            if not isinstance(key, str) or len(key) > 64:
                return False
            if isinstance(item, str):
                if len(item) > bounds.get(key, DEFAULT_CHARS):
                    return False
            elif isinstance(item, _NESTED) and not _within(
                item, bounds, bounds.get(key, DEFAULT_CHARS), depth + 1
            ):
                return False
        return True
    if isinstance(value, list):
        if depth >= MAX_DEPTH or len(value) > MAX_ITEMS:
            return False
        for item in value:
            if isinstance(item, str):
                if len(item) > limit:
                    return False
            elif isinstance(item, _NESTED) and not _within(item, bounds, limit, depth + 1):
                return False
        return True
    return True


def _where(path: tuple[str, ...]) -> str:
    """`eta`, `events.0.text`; a list result's entries are `result.0.text`."""
    if not path or path[0].isdigit():
        return ".".join(("result", *path))
    return ".".join(path)


def _bound(
    value: Any,
    bounds: Mapping[str, int],
    path: tuple[str, ...],
    limit: int,
    depth: int,
    notes: list[str],
) -> Any:
    # The path is joined only for a note: most results are cut nowhere.
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        notes.append(f"{_where(path)}: clipped from {len(value)} to {limit} characters")
        return value[: limit - 1] + "…"
    if not isinstance(value, dict | list):
        return value
    if depth >= MAX_DEPTH:
        notes.append(f"{_where(path)}: nested too deeply, dropped")
        return None
    if isinstance(value, list):
        if len(value) > MAX_ITEMS:
            notes.append(f"{_where(path)}: kept the first {MAX_ITEMS} of {len(value)} items")
        return [
            _bound(item, bounds, (*path, str(n)), limit, depth + 1, notes)
            for n, item in enumerate(value[:MAX_ITEMS])
        ]
    if len(value) > MAX_KEYS:
        notes.append(f"{_where(path)}: kept the first {MAX_KEYS} of {len(value)} fields")
    out = {}
    for key, item in list(value.items())[:MAX_KEYS]:
        name = key if isinstance(key, str) and len(key) <= 64 else str(key)[:64]
        out[name] = _bound(
            item, bounds, (*path, name), bounds.get(name, DEFAULT_CHARS), depth + 1, notes
        )
    return out
