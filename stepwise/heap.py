"""The process's heap once it is up: what start-up loaded is kept out of the collector's passes."""

from __future__ import annotations

import gc


def settle_heap() -> None:
    """Move what start-up loaded out of the garbage collector's sight, once it is serving.

    The understanding tables, compiled patterns, the catalog and every module live as long
    as the process, yet every full collection walked them all again: the bigger the
    understanding grew, the dearer each run (a standard run's share measured ~95 k
    instructions, bench/README.md §9, fifth pass). Frozen (`gc.freeze`), they are never
    scanned; nothing frozen is freed, which those objects never would be anyway. Called by
    `stepwise serve` when it starts serving, and by the bench's stepwise subject likewise.
    """
    gc.collect()
    gc.freeze()
