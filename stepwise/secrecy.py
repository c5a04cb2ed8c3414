"""The secrets the settings hold, blanked out of every log line from the moment a command
has read its settings.

Each command used to install the redaction where it first needed it (`serve` when it built
the Telegram application), so a command that talks to Telegram by another path (`doctor`'s
`getMe` and `getWebhookInfo`, logged by httpx at INFO with the token in the URL) printed
the token whole. Installing it in the CLI's entry point, right after the settings are read
and before any command runs, covers every command, including ones added later.
"""

from __future__ import annotations

from bot.redact import redact_in_logs
from stepwise.settings import Settings
from storage.store import is_postgres_url


def settings_secrets(settings: Settings) -> list[str]:
    """Every secret in `settings`, whole and (for the token) its secret half: the bot
    token, the model key, the console token, the webhook secret, the database password."""
    found: list[str] = []
    token = settings.token()
    if token:
        found += [token, token.partition(":")[2]]
    for secret in (
        settings.llm_api_key,
        settings.embeddings_api_key,
        settings.staff_token,
        settings.webhook_secret,
    ):
        if secret is not None:
            found.append(secret.get_secret_value())
    if is_postgres_url(settings.db_path):
        # Only for a PostgreSQL URL: the driver costs start-up time every other command
        # would pay for nothing.
        from psycopg.conninfo import conninfo_to_dict

        try:
            found.append(str(conninfo_to_dict(settings.db_path).get("password") or ""))
        except Exception:
            found.append(settings.db_path)  # malformed: never show it at all
    return [s for s in found if s]


def hide_settings_secrets(settings: Settings) -> None:
    """Blank every secret of `settings` out of every log record of this process (before
    any formatter or handler sees it: `bot.redact`)."""
    redact_in_logs(*settings_secrets(settings))
