"""A local, faithful stand-in for the Telegram Bot API, for tests that must not need Telegram.

Start a `StandIn`, point python-telegram-bot at it with
`ApplicationBuilder().token(TOKEN).base_url(standin.base_url).base_file_url(standin.base_file_url)`
and drive the other side of the conversation from the test: every update shape real
Telegram sends (`inject_message` also into forum topics, `inject_edited_message`,
`inject_service_message`, `inject_channel_post`, `press_button` also on inaccessible
messages, `inject_my_chat_member`, and `inject_update` for anything else), who may do
what in a group (`set_bot_rights`, `set_member`, read back by getChat/getChatMember and
enforced by the forum topic methods), faults (`fail_next`), and waits (`wait_for`, ...). `stepwise standin` serves it for other
processes, with the same controls under `/_test/...`. Flood limits come as one
`FloodLimits`; everything time-dependent reads one injected `Clock`.
"""

from .clock import Clock, SystemClock
from .errors import ApiError
from .flood import FloodLimits
from .markup import MAX_CALLBACK_DATA_BYTES, Button
from .records import CallbackAnswer, CallRecord, ShownMessage, WebhookDelivery
from .server import DEFAULT_TOKEN, StandIn
from .webhook import SECRET_HEADER, WebhookRetry

__all__ = [
    "DEFAULT_TOKEN",
    "MAX_CALLBACK_DATA_BYTES",
    "SECRET_HEADER",
    "ApiError",
    "Button",
    "CallRecord",
    "CallbackAnswer",
    "Clock",
    "FloodLimits",
    "ShownMessage",
    "StandIn",
    "SystemClock",
    "WebhookDelivery",
    "WebhookRetry",
]
