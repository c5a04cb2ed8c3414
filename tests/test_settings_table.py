"""The settings table (docs/operating.md, moved there from the README by issue 34 item 5),
the deploy env example and the settings model say the same thing: every variable the model reads has a row, every row is a variable it reads, a
documented default is the model's default, and every variable the example sets is a
documented one (the example says so to the operator who copies it).
"""

from __future__ import annotations

import re
from pathlib import Path

from stepwise.settings import Settings, env_name

ROOT = Path(__file__).resolve().parents[1]
TABLE_DOC = ROOT / "docs" / "operating.md"  # the page that has "## Settings"
ENV_EXAMPLE = ROOT / "deploy" / "stepwise.env.example"
VARIABLES = {env_name(field): field for field in Settings.model_fields}


def table_rows() -> dict[str, str]:
    """{variable: its default cell} of the table under "## Settings"."""
    text = TABLE_DOC.read_text(encoding="utf-8")
    section = text[text.index("\n## Settings\n") :]
    end = section.find("\n## ", 1)
    section = section if end < 0 else section[:end]
    rows = {}
    for line in section.splitlines():
        found = re.match(r"\| `([A-Z][A-Z0-9_]*)` \| ([^|]*) \|", line)
        if found:
            assert found[1] not in rows, f"{found[1]} has two rows"
            rows[found[1]] = found[2].strip()
    return rows


def example_variables() -> dict[str, str]:
    values = {}
    for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, sep, value = line.partition("=")
            assert sep, f"not NAME=value: {line!r}"
            values[name.strip()] = value
    return values


def test_the_table_has_a_row_for_every_setting_and_no_other() -> None:
    rows = table_rows()
    assert set(VARIABLES) - set(rows) == set(), "settings missing from the settings table"
    assert set(rows) - set(VARIABLES) == set(), "rows the settings model does not read"


def test_a_documented_default_is_the_models_default() -> None:
    """A default cell written as a value (`24h`, `5`) reads, as that variable, to the
    model's default; "—" (not set) is a field without one."""
    checked = 0
    for name, cell in table_rows().items():
        field = VARIABLES[name]
        default = Settings.model_fields[field].default
        shown = re.match(r"`([^`]+)`", cell)
        if cell.startswith("—"):
            assert default in (None, frozenset()), f"{name}: documented unset, default {default!r}"
        elif shown and default is not None:
            read = getattr(Settings.model_validate({name: shown[1]}), field)
            assert read == default, f"{name}: the table says {shown[1]!r}, the model {default!r}"
            checked += 1
    assert checked >= 15  # the check is not vacuous


def test_every_variable_of_the_env_example_is_in_the_table_and_valid() -> None:
    example = example_variables()
    rows = table_rows()
    assert {"STEPWISE_STAFF_CHAT_ID", "STEPWISE_CONSOLE_URL"} <= set(example)
    assert set(example) - set(rows) == set(), "the env example sets undocumented variables"
    assert "Every variable is in the Settings table of docs/operating.md" in ENV_EXAMPLE.read_text()
    settings = Settings.model_validate(example)  # its placeholders are valid values too
    assert settings.staff_chat_id == int(example["STEPWISE_STAFF_CHAT_ID"])
