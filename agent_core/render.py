"""A tool's result in the customer's words, from its catalog entry's `ResultView`. Pure.

Only values the tool observed are shown, through templates that can name a field and
nothing else (`spec.fill`). A template may also name the step's arguments: the result's
own field wins, the argument is the fallback (an upstream that leaves `order_id` out of
its answer still gets a sentence about the order the customer asked for).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent_core.models import Language
from agent_core.spec import ResultView, Template, ToolSpec, fill


def render_result(
    spec: ToolSpec, data: Any, args: Mapping[str, Any], language: Language
) -> str | None:
    """The result as one or more lines; None when the view has nothing to say about it."""
    view = spec.view
    base = spec.display_args(args)
    lines: list[str] = []
    if isinstance(data, dict):
        head = _first_fitting(view.lines, _values(view, data, base, language), data, language)
        if head is not None:
            lines.append(head)
    if view.each is not None:
        for item in _items(data, view.each)[: view.max_items]:
            lines.append(_item_line(view, item, base, language))
    return "\n".join(lines) if lines else None


def _items(data: Any, each: str) -> Sequence[Any]:
    """The list a view shows item by item ("" = the result, or its `results`)."""
    if each == "":
        found = data.get("results") if isinstance(data, dict) else data
    else:
        found = data.get(each) if isinstance(data, dict) else None
    return found if isinstance(found, list) else []


def _item_line(view: ResultView, item: Any, base: Mapping[str, str], language: Language) -> str:
    if not isinstance(item, dict):
        return str(item)
    line = _first_fitting(view.item_lines, _values(view, item, base, language), item, language)
    return line or ""


def _values(
    view: ResultView, data: Mapping[str, Any], base: Mapping[str, str], language: Language
) -> dict[str, str]:
    """What a template may read: the arguments, then the result's own (labelled) fields."""
    values = dict(base)
    for key, raw in data.items():
        if raw is None or isinstance(raw, dict | list):
            continue
        text = str(raw).strip()
        labels = view.labels.get(str(key))
        if labels is not None and text in labels:
            text = labels[text][language]
        values[str(key)] = text
    return values


def _first_fitting(
    templates: Sequence[Template],
    values: Mapping[str, str],
    raw: Mapping[str, Any],
    language: Language,
) -> str | None:
    for template in templates:
        if template.fits(values, raw):
            return fill(template[language], values)
    return None
