"""Horizontal bar charts as plain geometry, drawn as inline SVG by the overview template.

Server-side so the console needs no chart library, no CDN and no script: it works
offline and under a strict Content-Security-Policy. Labels stay text (escaped by Jinja).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

ROW_HEIGHT = 26
BAR_HEIGHT = 18
LABEL_WIDTH = 170
VALUE_WIDTH = 56


@dataclass(frozen=True)
class BarInput:
    label: str
    value: int
    href: str | None = None
    css_class: str = ""


@dataclass(frozen=True)
class Bar:
    label: str
    value: int
    href: str | None
    css_class: str
    y: int
    width: float
    text_y: int


@dataclass(frozen=True)
class BarChart:
    title: str
    bars: list[Bar]
    width: int
    height: int
    bar_x: int
    total: int

    @property
    def empty(self) -> bool:
        return not self.bars


def bar_chart(title: str, rows: Sequence[BarInput], *, width: int = 520) -> BarChart:
    """Bars scaled to the largest value; zero-value rows are kept (a status with none)."""
    span = width - LABEL_WIDTH - VALUE_WIDTH
    top = max((r.value for r in rows), default=0)
    bars = [
        Bar(
            label=row.label,
            value=row.value,
            href=row.href,
            css_class=row.css_class,
            y=i * ROW_HEIGHT + (ROW_HEIGHT - BAR_HEIGHT) // 2,
            width=max(2.0, span * row.value / top) if top and row.value else 0.0,
            text_y=i * ROW_HEIGHT + ROW_HEIGHT // 2 + 5,
        )
        for i, row in enumerate(rows)
    ]
    return BarChart(
        title=title,
        bars=bars,
        width=width,
        height=max(ROW_HEIGHT, len(bars) * ROW_HEIGHT),
        bar_x=LABEL_WIDTH,
        total=sum(r.value for r in rows),
    )
