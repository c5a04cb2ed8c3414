"""The deployment in deploy/ runs (issue 25 item 6): the SAME command lines systemd would
run, read from deploy/stepwise@.service (ExecStartPre, ExecStart, Environment,
EnvironmentFile with deploy/stepwise.env.example), started here for two replicas against
the Bot API stand-in and the local PostgreSQL (a fresh schema), until both /readyz on
the unit's health ports say ready; then a customer's message goes through the webhook,
`stepwise doctor` with the same environment passes, and SIGTERM stops both with exit 0.

What the test changes is only what a laptop is not: the install path (/opt/stepwise →
this checkout's .venv), the token and Bot API base (the stand-in), STEPWISE_DB (the test
schema) and the public webhook URL (nginx's place is taken by replica 1's own port: the
stand-in posts to loopback over plain http). No nginx runs here: its snippet is checked
against the unit (the upstream ports are the replicas', only /telegram is public).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

from standin import StandIn
from tests.storage_backends import PG_URL, fresh_schema, with_search_path

from .conftest import PATIENCE, TOKEN, bot_texts, until
from .test_operating import until_http

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
UNIT = DEPLOY / "stepwise@.service"
ENV_EXAMPLE = DEPLOY / "stepwise.env.example"
NGINX = DEPLOY / "nginx.conf"
INSTALLED = "/opt/stepwise"  # where the unit expects the checkout (WorkingDirectory)
CUSTOMER = 42424242


# -- reading the unit as systemd does (the parts it uses) -------------------------------------


def unit_service(path: Path, instance: str) -> dict[str, list[str]]:
    """The [Service] section: each key's values in order, lines continued with a trailing
    backslash joined, the specifiers %i (instance) and %% expanded."""
    section = None
    values: dict[str, list[str]] = {}
    text = re.sub(r"\\\n\s*", " ", path.read_text(encoding="utf-8"))
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        if section != "Service":
            continue
        key, _, value = line.partition("=")
        value = re.sub(r"%(.)", lambda m: instance if m[1] == "i" else m[1], value.strip())
        values.setdefault(key.strip(), []).append(value)
    return values


def environment_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines (comments and blank lines skipped, quotes removed)."""
    env = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        key, _, value = line.partition("=")
        env[key.strip()] = value.strip().strip("'\"")
    return env


def local_argv(line: str) -> list[str]:
    """A unit command line with the installed executable swapped for this checkout's."""
    argv = shlex.split(line.lstrip("-"))
    installed = f"{INSTALLED}/.venv/bin/stepwise"
    assert argv[0] == installed, f"the unit runs {argv[0]}, not {installed}"
    return [str(Path(sys.executable).parent / "stepwise"), *argv[1:]]


def flag(argv: list[str], name: str) -> int:
    return int(argv[argv.index(name) + 1])


def free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def instances_with_free_ports(count: int) -> list[str]:
    """Instance names whose ports (webhook, health, console, as the unit derives them)
    nobody on this machine uses right now."""
    chosen = []
    for n in range(1, 10):
        argv = local_argv(unit_service(UNIT, str(n))["ExecStart"][0])
        ports = [flag(argv, f) for f in ("--port", "--health-port", "--staff-port")]
        if all(free(p) for p in ports):
            chosen.append(str(n))
        if len(chosen) == count:
            return chosen
    raise AssertionError("no free instance ports on this machine")


# -- the test ---------------------------------------------------------------------------------


async def run_to_end(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    """A command to its end, without blocking the stand-in's loop: (code, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        *argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120 * PATIENCE)
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


@contextlib.asynccontextmanager
async def replica(
    instance: str, env: dict[str, str], workdir: Path
) -> AsyncIterator[tuple[asyncio.subprocess.Process, list[str], Path]]:
    """ExecStartPre then ExecStart of `stepwise@<instance>`; SIGTERM (KillSignal) at the end."""
    service = unit_service(UNIT, instance)
    log = workdir / f"stepwise@{instance}.log"
    for pre in service.get("ExecStartPre", []):
        code, _, err = await run_to_end(local_argv(pre), env, workdir)
        assert code == 0, err
    argv = local_argv(service["ExecStart"][0])
    with log.open("ab") as out:
        proc = await asyncio.create_subprocess_exec(
            *argv, env=env, cwd=workdir, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        yield proc, argv, log
    finally:
        if proc.returncode is None:
            assert service["KillSignal"] == ["SIGTERM"]
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 30 * PATIENCE)
            except TimeoutError:
                proc.kill()
                await proc.wait()


def unit_environment(instance: str, overrides: dict[str, str]) -> dict[str, str]:
    """What systemd gives the process: Environment= lines, then EnvironmentFile= (which
    overrides them), here the example file; then what a laptop must change."""
    service = unit_service(UNIT, instance)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    for line in service.get("Environment", []):
        for assignment in shlex.split(line):
            key, _, value = assignment.partition("=")
            env[key] = value
    assert service["EnvironmentFile"] == ["/etc/stepwise/stepwise.env"]
    env.update(environment_file(ENV_EXAMPLE))
    env.update(overrides)
    return env


async def test_the_documented_deployment_runs(standin: StandIn, tmp_path: Path) -> None:
    example = environment_file(ENV_EXAMPLE)
    # The staff group and staff member the example names exist in this Telegram.
    staff_chat, staff_id = (
        int(example["STEPWISE_STAFF_CHAT_ID"]),
        int(example["STEPWISE_STAFF_IDS"]),
    )
    standin.add_chat(staff_chat, staff_id, title="Support staff", is_forum=True)
    standin.set_bot_rights(staff_chat, can_manage_topics=True)
    first, second = instances_with_free_ports(2)
    first_port = flag(local_argv(unit_service(UNIT, first)["ExecStart"][0]), "--port")

    with fresh_schema() as schema:
        overrides = {
            "TELEGRAM_BOT_TOKEN": TOKEN,
            "TELEGRAM_API_BASE_URL": standin.base_url,
            "STEPWISE_DB": with_search_path(PG_URL, schema),
            # nginx's place: replica `first` itself, over loopback http.
            "STEPWISE_WEBHOOK_URL": f"http://127.0.0.1:{first_port}",
            "HOME": str(tmp_path),
        }
        env = unit_environment(first, overrides)
        async with (
            replica(first, env, tmp_path) as (one, argv_one, log_one),
            replica(second, unit_environment(second, overrides), tmp_path) as (two, argv_two, _),
        ):
            for proc, argv in ((one, argv_one), (two, argv_two)):
                health = f"http://127.0.0.1:{flag(argv, '--health-port')}"
                async with httpx.AsyncClient(base_url=health, timeout=30) as client:

                    def up(r: httpx.Response, proc: asyncio.subprocess.Process = proc) -> bool:
                        assert proc.returncode is None, log_one.read_text(errors="replace")
                        return r.status_code == 200

                    ready = await until_http(client, "/readyz", up, what="ready", within=120)
                poller = next(c for c in ready.json()["checks"] if c["name"] == "poller_lease")
                assert poller["reason"] == "webhook: no poller lease"

            hook = standin.calls("setWebhook")[-1].params
            assert hook["url"] == f"http://127.0.0.1:{first_port}/telegram"
            assert hook["secret_token"] == example["STEPWISE_WEBHOOK_SECRET"]

            # A customer's message arrives through the webhook and is answered.
            standin.inject_message(CUSTOMER, CUSTOMER, "where is my order A1001?")
            await until(lambda: bot_texts(standin, CUSTOMER), within=60, what="an answer")

            # The operator's check, with the same environment: everything passes.
            doctor = local_argv(f"{INSTALLED}/.venv/bin/stepwise doctor")
            code, out, err = await run_to_end(doctor, env, tmp_path)
            report = out + err
            assert code == 0, report
            assert "✔ webhook: http://127.0.0.1" in report
            assert "✔ clock:" in report and TOKEN not in report

        assert one.returncode == 0 and two.returncode == 0


def test_the_nginx_snippet_matches_the_unit() -> None:
    """nginx passes /telegram (and nothing else) to the replicas' webhook ports."""
    conf = NGINX.read_text(encoding="utf-8")
    upstream = re.findall(r"^\s*server\s+127\.0\.0\.1:(\d+);", conf, re.MULTILINE)
    expected = [
        str(flag(local_argv(unit_service(UNIT, n)["ExecStart"][0]), "--port")) for n in "12"
    ]
    assert upstream == expected
    assert re.search(r"location = /telegram \{\s*proxy_pass http://stepwise_webhook;", conf)
    assert conf.count("proxy_pass") == 1  # health, metrics and the console stay private
    assert "listen 443 ssl" in conf
    example = environment_file(ENV_EXAMPLE)
    assert example["STEPWISE_WEBHOOK_URL"].startswith("https://")
    assert example["STEPWISE_WEBHOOK_URL"].removeprefix("https://") in conf
