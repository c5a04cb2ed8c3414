"""A tool's result in the customer's words, from its catalog entry's `ResultView`. Pure.

Only values the tool observed are shown, through templates that can name a field and
nothing else (`spec.fill`). A template may also name the step's arguments: the result's
own field wins, the argument is the fallback (an upstream that leaves `order_id` out of
its answer still gets a sentence about the order the customer asked for).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from agent_core.models import Language
from agent_core.spec import ResultView, Template, ToolSpec, fill


class _Fields(Mapping[str, str]):
    """What a template may read: the result's own (labelled) fields, then the arguments.

    Worked out per name when a template asks (a template names two or three of them;
    a result may have dozens), as trimmed text; None and nested values read as absent.
    """

    __slots__ = ("_args", "_data", "_labels", "_language")

    def __init__(
        self,
        data: Mapping[str, Any],
        args: Mapping[str, Any],
        labels: Mapping[str, Mapping[str, Any]],
        language: Language,
    ) -> None:
        self._data = data
        self._args = args
        self._labels = labels
        self._language = language

    def get(self, name: str, default: Any = None) -> Any:
        raw = self._data.get(name)
        if raw is None or isinstance(raw, dict | list):
            given = self._args.get(name)
            return default if given is None else str(given)
        text = str(raw).strip()
        labels = self._labels.get(name)
        if labels is not None and text in labels:
            return labels[text][self._language]
        return text

    def __getitem__(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return str(value)

    def __iter__(self) -> Iterator[str]:
        return iter({**self._args, **self._data})

    def __len__(self) -> int:
        return len({**self._args, **self._data})


def render_result(
    spec: ToolSpec, data: Any, args: Mapping[str, Any], language: Language
) -> str | None:
    """The result as one or more lines; None when the view has nothing to say about it."""
    view = spec.view
    lines: list[str] = []
    if isinstance(data, dict) and view.lines:
        fields = _Fields(data, args, view.labels, language)
        head = _first_fitting(view.lines, fields, data, language)
        if head is not None:
            lines.append(head)
    if view.each is not None:
        for item in _items(data, view.each)[: view.max_items]:
            lines.append(_item_line(view, item, args, language))
    return "\n".join(lines) if lines else None


def _items(data: Any, each: str) -> Sequence[Any]:
    """The list a view shows item by item ("" = the result, or its `results`)."""
    if each == "":
        found = data.get("results") if isinstance(data, dict) else data
    else:
        found = data.get(each) if isinstance(data, dict) else None
    return found if isinstance(found, list) else []


def _item_line(view: ResultView, item: Any, args: Mapping[str, Any], language: Language) -> str:
    if not isinstance(item, dict):
        return str(item)
    fields = _Fields(item, args, view.labels, language)
    return _first_fitting(view.item_lines, fields, item, language) or ""


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
