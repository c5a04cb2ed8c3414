"""Serving an ASGI app from a task of the process that embeds it (the bot, the demo).

Used by the staff console (`console.server`) and the health endpoints (`bot.health`), which
must not import each other; below both, above nothing of the product's.
"""

from serving.embedded import EmbeddedServer, serve_embedded

__all__ = ["EmbeddedServer", "serve_embedded"]
