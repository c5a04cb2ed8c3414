"""The process's heap once it is up: what start-up loaded is kept out of the collector's passes."""

from __future__ import annotations

import gc

# The first generation's threshold once serving (CPython's default is 700). The collector
# counts allocations minus deallocations of tracked objects; a run in flight holds a few
# hundred (its task, coroutine frames, models, futures), so with 50 runs at a time that count
# swings past 700 over and over, and each young collection walks every run's live objects:
# ~110 k instructions a run at 50 concurrent, ~5 k sequential (bench/README.md §9, sixth
# pass). 10 000 keeps it out of that swing; cyclic garbage waits for at most that many
# allocations more (a few MB at most), the older generations keep their defaults.
YOUNG_THRESHOLD = 10_000


def settle_heap() -> None:
    """Move what start-up loaded out of the garbage collector's sight, once it is serving.

    The understanding tables, compiled patterns, the catalog and every module live as long
    as the process, yet every full collection walked them all again: the bigger the
    understanding grew, the dearer each run (a standard run's share measured ~95 k
    instructions, bench/README.md §9, fifth pass). Frozen (`gc.freeze`), they are never
    scanned; nothing frozen is freed, which those objects never would be anyway. The young
    generation's threshold is raised so many runs in flight do not trigger collection after
    collection (`YOUNG_THRESHOLD`). Called by `stepwise serve` when it starts serving, and
    by the bench's stepwise subject likewise.
    """
    gc.collect()
    gc.freeze()
    young, older, oldest = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_THRESHOLD), older, oldest)
