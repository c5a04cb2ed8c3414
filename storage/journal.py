"""Which rows a commit of the executor's journal writes, for either backend.

`run_planned` writes the run and its whole plan. Later events update the run's state
columns and the state of the steps they name; a run-level event (`run_finished`) also
updates every step, since finishing can change steps that have no event of their own
(pending steps cancelled after a decline, the paused step of an expired run).

The decision is the same on SQLite and PostgreSQL; only the statements' spelling differs,
so each store passes its own `JournalSql` (built from the column lists of `storage.tables`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_core.models import EventKind, Run, RunEvent
from storage.tables import (
    Statement,
    event_row,
    run_row,
    run_state_row,
    step_row,
    step_state_row,
    to_json,
)


@dataclass(frozen=True)
class JournalSql:
    """The statements of one backend that a transition is made of."""

    upsert_run: Statement
    upsert_step: Statement
    update_run: Statement
    # Bound by name (`status`, `id`): only matches when the status changes, so the indexes
    # on `status` are touched only then.
    update_run_status: str
    update_step: Statement
    insert_event: Statement


def transition_statements(
    run: Run, events: Sequence[RunEvent], sql: JournalSql, lease: Mapping[str, Any] | None = None
) -> list[tuple[str, Any]]:
    """The statements that commit `events` and the state of `run` they leave behind.

    `lease` (`storage.leases.Lease.columns`) is bound by name to the run's insert and to
    the status change, the two statements that start and end a drive, when the store's
    `upsert_run` and `update_run_status` name its columns: no statement of its own.
    """
    lease = lease or {}
    planned = whole = False
    step_ids: list[str] = []
    for event in events:
        fields = vars(event)  # as in `storage.tables` ("Reading fields")
        if fields["kind"] is EventKind.RUN_PLANNED:
            planned = True
        step_id = fields["step_id"]
        if step_id is None:
            whole = True
        elif step_id not in step_ids:
            step_ids.append(step_id)
    statements: list[tuple[str, Any]] = []
    observations: dict[str, str | None] = {}
    if planned:
        row = run_row(run)
        row.update(lease)
        statements.append(sql.upsert_run.bind(row))
        for position, step in enumerate(run.steps):
            observation = observations[step.id] = to_json(step.observation)
            statements.append(sql.upsert_step.bind(step_row(run.id, position, step, observation)))
    else:
        statements.append(sql.update_run.bind(run_state_row(run)))
        statements.append(
            (sql.update_run_status, {"status": run.status.value, "id": run.id, **lease})
        )
        for step in run.steps if whole else [run.step(s) for s in step_ids]:
            observation = observations[step.id] = to_json(step.observation)
            statements.append(sql.update_step.bind(step_state_row(run.id, step, observation)))
    for event in events:
        statements.append(sql.insert_event.bind(event_row(run, event, observations)))
    return statements
