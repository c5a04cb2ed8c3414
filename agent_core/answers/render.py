"""A tool's result in the customer's words, from its catalog entry's `ResultView`. Pure.

Only values the tool observed are shown, through templates that can name a field and
nothing else (`spec.fill`). A template may also name the step's arguments: the result's
own field wins, the argument is the fallback (an upstream that leaves `order_id` out of
its answer still gets a sentence about the order the customer asked for).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent_core.catalog.spec import CompiledLine, ToolSpec
from agent_core.models import Language

_NESTED = (dict, list)  # a tuple: `dict | list` would build a union per call


def render_result(
    spec: ToolSpec, data: Any, args: Mapping[str, Any], language: Language
) -> str | None:
    """The result as one or more lines; None when the view has nothing to say about it."""
    lines_, each, item_lines, max_items, labels = spec.view.compiled[language]
    lines: list[str] = []
    if lines_ and isinstance(data, dict):
        head = _first_fitting(lines_, data, args, labels)
        if head is not None:
            lines.append(head)
    if each is not None:
        for item in _items(data, each)[:max_items]:
            if isinstance(item, dict):
                lines.append(_first_fitting(item_lines, item, args, labels) or "")
            else:
                lines.append(str(item))
    return "\n".join(lines) if lines else None


def _items(data: Any, each: str) -> Sequence[Any]:
    """The list a view shows item by item ("" = the result, or its `results`)."""
    if each == "":
        found = data.get("results") if isinstance(data, dict) else data
    else:
        found = data.get(each) if isinstance(data, dict) else None
    return found if isinstance(found, list) else []


def _first_fitting(
    templates: Sequence[CompiledLine],
    raw: Mapping[str, Any],
    args: Mapping[str, Any],
    labels: Mapping[str, Mapping[str, str]],
) -> str | None:
    """The first template that fits, filled: every field it names has a value, and each
    field in its `when` one of the values listed.

    What a template reads for a name: the result's own field as trimmed text (in the
    customer's words when `labels` has them), else the argument; None and nested values
    read as absent. Worked out at most once per name, however many templates name it (a
    template names two or three fields of a result that may have dozens).
    """
    values: dict[str, str | None] = {}
    for when, names, problem, text in templates:
        if when and any(str(raw.get(name)) not in allowed for name, allowed in when):
            continue
        if problem is not None:
            raise ValueError(problem)
        for name in names:
            if name in values:
                value = values[name]
            else:
                found = raw.get(name)
                if found is None or isinstance(found, _NESTED):
                    given = args.get(name)
                    value = None if given is None else str(given)
                else:
                    value = str(found).strip()
                    named = labels.get(name)
                    if named is not None:
                        value = named.get(value, value)
                values[name] = value
            if not value:
                break
        else:
            # Every name has a value and is a plain name (`placeholders`): `format_map`
            # fills it exactly as `fill` would.
            return text.format_map(values)
    return None
