"""The webhook's door: a POST is checked before PTB's handler reads it.

PTB's handler turns a body that is not UTF-8 JSON into a 500 (Telegram would retry it for
a day), and takes any `update_id`. An id the inbox cannot store (SQLite and PostgreSQL
keep a signed 64-bit integer) would be answered 503 "not stored" yet handled in memory,
so every redelivery would be answered again. Both are refused here with a 400 and one
log line, and nothing is handled: an update the inbox cannot keep is never answered.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import tornado.web
from telegram.ext import Application
from telegram.ext._utils.webhookhandler import TelegramHandler

from bot.inbox import storable_update_id

log = logging.getLogger(__name__)

WEBHOOK_PATH = "telegram"  # the URL path Telegram posts to (`start_application`)


class CheckedTelegramHandler(TelegramHandler):
    """PTB's handler, after the checks above (the secret is checked first, as PTB does)."""

    async def post(self) -> None:
        self._validate_post()
        body = self.request.body
        try:
            data = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            log.warning("webhook: a body of %d bytes is not JSON in UTF-8: 400, dropped", len(body))
            raise tornado.web.HTTPError(400, reason="not JSON in UTF-8") from None
        update_id = data.get("update_id") if isinstance(data, dict) else None
        if not storable_update_id(update_id):
            shown = update_id if isinstance(update_id, int) else type(update_id).__name__
            log.warning(
                "webhook: update_id %s is not an integer from 0 to 2^63-1, which the inbox"
                " cannot store: 400, not answered",
                shown,
            )
            raise tornado.web.HTTPError(400, reason="update_id out of range")
        await super().post()


def check_webhook_posts(application: Application[Any, Any, Any, Any, Any, Any]) -> bool:
    """Put `CheckedTelegramHandler` in front of PTB's on the running webhook's server
    (tornado tries the rules added later first); False when there is none."""
    updater = application.updater
    httpd = getattr(updater, "_httpd", None) if updater is not None else None
    server = getattr(httpd, "_http_server", None)
    app = getattr(server, "request_callback", None)
    shared = getattr(app, "shared_objects", None)
    if not isinstance(app, tornado.web.Application) or not isinstance(shared, dict):
        return False
    app.add_handlers(r".*", [(rf"/{WEBHOOK_PATH}/?", CheckedTelegramHandler, shared)])
    return True
