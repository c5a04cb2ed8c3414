"""The staff web console.

`create_app` / `serve_console` give staff a read-only view of every run (plan, steps,
retries, decisions, failures) in a browser. The browser demo that runs it next to the bot
lives in the composition root (`stepwise.demo`).
"""

from console.app import create_app
from console.server import ConsoleServer, serve_console, serve_staff_console

__all__ = ["ConsoleServer", "create_app", "serve_console", "serve_staff_console"]
