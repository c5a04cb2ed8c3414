"""The staff web console and the browser demo.

`create_app` / `serve_console` give staff a read-only view of every run (plan, steps,
retries, decisions, failures) in a browser; `console.demo.run_demo` starts the real bot
against the local Bot API stand-in with a browser chat page, for trying it without Telegram.
"""

from console.app import create_app
from console.server import ConsoleServer, serve_console, serve_staff_console

__all__ = ["ConsoleServer", "create_app", "serve_console", "serve_staff_console"]
