"""`rawtrio dashboard` on the command line: the URL printed once, `dashboard.json`, the
exit codes for a bad or busy port."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from rawtrio.testing.fake_model import FakeModelServer
from tests.dashboard.support import URL_LINE, Dashboard, dashboard_env
from tests.headless.support import Isolation, run_rawtrio


def test_the_url_is_printed_once_and_kept_private_while_it_runs(
    tmp_path: Path, model: FakeModelServer
) -> None:
    iso = Isolation(tmp_path)
    dash = Dashboard.start(iso, model.base_url)
    saved = iso.root / "state" / "dashboard.json"
    try:
        assert len(URL_LINE.findall(dash.output())) == 1
        info = json.loads(saved.read_text())
        assert info == {"url": f"{dash.url}/#token={dash.token}", "token": dash.token,
                        "pid": dash.proc.pid if dash.proc else None}  # fmt: skip
        assert saved.stat().st_mode & 0o777 == 0o600
        assert dash.ok("GET", "/api/bootstrap")["mode"] == "standalone"
    finally:
        assert dash.stop() == 0
    assert not saved.exists()


def test_a_busy_port_is_exit_1_and_a_bad_one_exit_2(tmp_path: Path, model: FakeModelServer) -> None:
    iso = Isolation(tmp_path)
    env = dashboard_env(iso, model.base_url)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run_rawtrio(iso, "dashboard", "--port", str(port), env=env)
    assert done.returncode == 1, done
    assert "cannot serve the dashboard" in done.stderr
    assert "Traceback" not in done.stderr
    done = run_rawtrio(iso, "dashboard", "--port", "70000", env=env)
    assert done.returncode == 2
    assert "--port" in done.stderr


def test_without_an_api_key_a_new_session_is_503_saying_what_to_set(
    tmp_path: Path, model: FakeModelServer
) -> None:
    iso = Isolation(tmp_path)
    dash = Dashboard.start(iso, model.base_url, env={"ANTHROPIC_API_KEY": ""})
    try:
        r = dash.client.post("/api/sessions", json={})
        assert r.status_code == 503, r.text
        error = r.json()["error"]
        assert error["code"] == "not_configured"
        assert "ANTHROPIC_API_KEY" in error["message"]
        assert dash.ok("GET", "/api/sessions") == {"sessions": [], "next_cursor": None}
    finally:
        assert dash.stop() == 0
