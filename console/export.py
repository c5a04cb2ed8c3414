"""Runs as JSON lines, byte-for-byte the format of `stepwise export`.

Staff turn failures into regression cases by exporting exactly what they filtered. The
record shape is not defined here: `storage.records.export_record` is the one definition, shared
with the CLI, so a case exported from the console replays like one from the terminal.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from storage.history import RunFilter
from storage.records import export_record
from storage.store import RunStore


async def run_line(store: RunStore, run_id: str) -> str | None:
    """One run's JSONL line (with its newline), or None if there is no such run."""
    run = await store.load_run(run_id)
    if run is None:
        return None
    timeline = await store.history.timeline(run.id)
    return json.dumps(export_record(run, timeline), ensure_ascii=False) + "\n"


async def export_lines(store: RunStore, flt: RunFilter) -> AsyncIterator[str]:
    """Every run matching `flt`, newest first, streamed one keyset page at a time."""
    async for summary in store.history.iter_runs(flt):
        line = await run_line(store, summary.id)
        if line is not None:
            yield line
