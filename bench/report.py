"""Figures and goals: one JSON line each as they come, a readable table at the end.

A figure is one number with its unit and the labels that say what was measured
(`system=stepwise sync=FULL mode=50-concurrent`). A goal compares figures with a target and
is reported PASS or MISS; a miss never fails the process.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TextIO


@dataclass(frozen=True)
class Figure:
    section: str
    metric: str
    value: float
    unit: str
    labels: Mapping[str, str] = field(default_factory=dict)
    extra: Mapping[str, object] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "section": self.section,
            **self.labels,
            "metric": self.metric,
            "value": round(self.value, 6),
            "unit": self.unit,
        }
        if self.extra:
            data["extra"] = dict(self.extra)
        return data


@dataclass(frozen=True)
class Goal:
    name: str
    target: str
    measured: str
    passed: bool
    note: str = ""

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "MISS"

    def as_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "goal": self.name,
            "target": self.target,
            "measured": self.measured,
            "result": self.verdict,
        }
        if self.note:
            data["note"] = self.note
        return data


class Report:
    def __init__(self, out: TextIO = sys.stdout) -> None:
        self.out = out
        self.figures: list[Figure] = []
        self.goals: list[Goal] = []
        self.notes: list[str] = []

    def add(
        self,
        section: str,
        metric: str,
        value: float,
        unit: str,
        labels: Mapping[str, str] | None = None,
        **extra: object,
    ) -> Figure:
        figure = Figure(section, metric, float(value), unit, dict(labels or {}), extra)
        self.figures.append(figure)
        self._line(figure.as_json())
        return figure

    def goal(self, name: str, target: str, measured: str, passed: bool, note: str = "") -> Goal:
        goal = Goal(name, target, measured, passed, note)
        self.goals.append(goal)
        self._line(goal.as_json())
        return goal

    def note(self, text: str) -> None:
        self.notes.append(text)
        self._line({"note": text})

    def value(self, section: str, metric: str, **labels: str) -> float | None:
        """The last figure matching section, metric and (a subset of) labels."""
        for figure in reversed(self.figures):
            if figure.section != section or figure.metric != metric:
                continue
            if all(figure.labels.get(k) == v for k, v in labels.items()):
                return figure.value
        return None

    def _line(self, data: Mapping[str, object]) -> None:
        self.out.write(json.dumps(data, ensure_ascii=False) + "\n")
        self.out.flush()

    # -- the table ---------------------------------------------------------------------

    def table(self) -> str:
        """One block per section: a row per label set, a column per metric."""
        blocks: list[str] = []
        sections: list[str] = []
        for figure in self.figures:
            if figure.section not in sections:
                sections.append(figure.section)
        for section in sections:
            figures = [f for f in self.figures if f.section == section]
            blocks.append(_section_table(section, figures))
        if self.goals:
            rows = [["goal", "target", "measured", "result"]]
            rows += [[g.name, g.target, g.measured, g.verdict] for g in self.goals]
            blocks.append("== goals ==\n" + _grid(rows))
            notes = [f"  - {g.name}: {g.note}" for g in self.goals if g.note]
            if notes:
                blocks.append("goal notes:\n" + "\n".join(notes))
        if self.notes:
            blocks.append("notes:\n" + "\n".join(f"  - {n}" for n in self.notes))
        return "\n\n".join(blocks)


def _section_table(section: str, figures: list[Figure]) -> str:
    label_keys: list[str] = []
    metrics: list[tuple[str, str]] = []
    for figure in figures:
        for key in figure.labels:
            if key not in label_keys:
                label_keys.append(key)
        if (figure.metric, figure.unit) not in metrics:
            metrics.append((figure.metric, figure.unit))
    rows_by_labels: dict[tuple[str, ...], dict[tuple[str, str], float]] = {}
    for figure in figures:
        row_key = tuple(figure.labels.get(k, "") for k in label_keys)
        rows_by_labels.setdefault(row_key, {})[(figure.metric, figure.unit)] = figure.value
    header = [*label_keys, *(f"{m} ({u})" if u else m for m, u in metrics)]
    rows = [header]
    for row_key, values in rows_by_labels.items():
        cells = [_fmt(values[m]) if m in values else "" for m in metrics]
        rows.append([*row_key, *cells])
    return f"== {section} ==\n" + _grid(rows)


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 0.1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def _grid(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
