"""deploy/nginx.conf is accepted by the nginx installed here (`nginx -t`): Debian 12 ships
1.22, which refused the `http2 on;` of nginx 1.25.1+. Skipped where nginx is absent
(`.ci/run` installs Debian's nginx-light).

The snippet is included from a minimal main configuration whose files all live in the
test's directory, with a self-signed certificate in place of Let's Encrypt's, so the check
runs without root and touches nothing of the machine's own nginx.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

NGINX_CONF = Path(__file__).parents[2] / "deploy" / "nginx.conf"
NGINX = shutil.which("nginx") or next(
    (p for p in ("/usr/sbin/nginx", "/sbin/nginx") if Path(p).exists()), None
)

pytestmark = pytest.mark.skipif(NGINX is None, reason="nginx is not installed")


def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    cert, key = tmp_path / "fullchain.pem", tmp_path / "privkey.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "ec"),
            *("-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"),
            *("-subj", "/CN=bot.example.com", "-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def nginx_test(tmp_path: Path, snippet: str) -> subprocess.CompletedProcess[str]:
    """`nginx -t` on `snippet` inside a main configuration of the test's own."""
    cert, key = self_signed(tmp_path)
    live = "/etc/letsencrypt/live/bot.example.com/"
    assert snippet.count(live) == 2  # the two certificate lines, replaced below
    snippet = snippet.replace(live + "fullchain.pem", str(cert))
    snippet = snippet.replace(live + "privkey.pem", str(key))
    (tmp_path / "stepwise.conf").write_text(snippet, encoding="utf-8")
    temp = "\n".join(
        f"    {kind}_temp_path {tmp_path / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    main = tmp_path / "nginx.conf"
    main.write_text(
        f"pid {tmp_path / 'nginx.pid'};\n"
        f"error_log {tmp_path / 'error.log'};\n"
        "events {}\n"
        "http {\n"
        f"    access_log off;\n{temp}\n"
        f"    include {tmp_path / 'stepwise.conf'};\n"
        "}\n",
        encoding="utf-8",
    )
    assert NGINX is not None
    return subprocess.run(
        [
            NGINX,
            "-t",
            "-q",
            "-p",
            str(tmp_path),
            "-e",
            str(tmp_path / "error.log"),
            "-c",
            str(main),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_deployed_nginx_snippet_passes_nginx_t(tmp_path: Path) -> None:
    checked = nginx_test(tmp_path, NGINX_CONF.read_text(encoding="utf-8"))
    assert checked.returncode == 0, checked.stderr


def test_nginx_t_here_fails_a_broken_snippet(tmp_path: Path) -> None:
    """The check can fail: a directive this nginx does not know is refused."""
    broken = NGINX_CONF.read_text(encoding="utf-8").replace(
        "listen 443 ssl;", "listen 443 ssl;\n    no_such_directive on;"
    )
    checked = nginx_test(tmp_path, broken)
    assert checked.returncode != 0 and "no_such_directive" in checked.stderr
