"""Benchmarks for stepwise: `python -m bench` (or `make bench`).

Sections (see bench/README.md): executor throughput against LangGraph and against the raw
aiosqlite commit limit, memory of paused runs, the Telegram path through the local Bot API
stand-in, and staff queries over a large history. Every figure is printed as one JSON line
as soon as it is known; a readable table and the goals (PASS/MISS) follow at the end.
"""
