"""`--profile DIR`: where the time goes, with pyinstrument, outside the timed runs.

Profiles a fresh subject for a few hundred runs (sequential and concurrent) and writes a
text and an HTML report per case. pyinstrument samples the event loop's thread; the time
aiosqlite's worker thread spends inside SQLite shows up as the loop waiting (`select`).
"""

from __future__ import annotations

from pathlib import Path

from bench.measure import drive, remove_db
from bench.throughput import LANGGRAPH, STEPWISE, Subject, mode_label


async def _subject(name: str, path: Path, sync: str) -> Subject:
    remove_db(path)
    if name == STEPWISE:
        from bench.workload import StepwiseSubject

        return await StepwiseSubject.open(path, sync)
    from bench.langgraph_flow import LangGraphSubject

    return await LangGraphSubject.open(path, sync)


async def profile(out: Path, workdir: Path, runs: int, concurrency: int, sync: str) -> list[Path]:
    from pyinstrument import Profiler

    written: list[Path] = []
    for name in (STEPWISE, LANGGRAPH):
        for level in (1, concurrency):
            subject = await _subject(name, workdir / f"profile-{name}.db", sync)
            try:
                await drive(subject.run_one, 0, 50, level)  # warm up outside the profile
                profiler = Profiler(interval=0.0005, async_mode="disabled")
                profiler.start()
                await drive(subject.run_one, 50, runs, level)
                profiler.stop()
            finally:
                await subject.close()
            stem = out / f"{name}-{sync.lower()}-{mode_label(level)}"
            text = profiler.output_text(unicode=True, color=False, show_all=False)
            written += _write(stem, text, profiler.output_html())
    return written


def _write(stem: Path, text: str, html: str) -> list[Path]:
    stem.parent.mkdir(parents=True, exist_ok=True)
    txt, page = Path(f"{stem}.txt"), Path(f"{stem}.html")
    txt.write_text(text, encoding="utf-8")
    page.write_text(html, encoding="utf-8")
    return [txt, page]
