"""A test's own local HTTP API (a shop, a model server) on a free loopback port.

Its own module, importing nothing of the product, so a stand-in that uses it stays a
unit of the layer its tests exercise (`tests/changed_layers.py` follows test helpers'
imports; `tests.harness` brings the bot).
"""

from __future__ import annotations

from aiohttp import web


async def serve_app(app: web.Application) -> tuple[web.AppRunner, str]:
    """`app` on a free loopback port: its runner (to clean up) and its base URL."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"
