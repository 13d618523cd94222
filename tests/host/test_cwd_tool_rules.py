"""`--allowedTools` / `--disallowedTools` path patterns are the session's: with `--cwd DIR`
they are taken from DIR, not from the directory the command runs in, wherever `--cwd`
stands among the flags, and a session resumed from another directory (`--resume ID`)
takes them from its own stored directory; the same for a local run and one attached to a
real `rawtrio serve` (the client sends the patterns as given, the host maps them from the
session's directory). The real program against the fake model, which asks for writes by
absolute path (the form that tells the two apart)."""

from __future__ import annotations

import itertools
import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from rawtrio.testing.fake_model import Scenario
from tests.headless.support import LIVENESS_S, fake_model_in_thread, rawtrio_argv, run_rawtrio
from tests.host.support import Place


@pytest.fixture(params=["local", "attached"])
def how(request: pytest.FixtureRequest) -> str:
    """`--no-attach`, or `--attach` with a host running (the client must not start one)."""
    if request.param == "attached":
        request.getfixturevalue("host")
    return "--no-attach" if request.param == "local" else "--attach"


def write(path: Path) -> dict[str, Any]:
    return {"name": "write_file", "arguments": {"path": str(path), "content": "x\n"}}


def write_the_files(place: Place, how: str, project: Path, *flags: str) -> None:
    """Ask for writes into `project`'s src/ (allowed), the command's own src/ (not the
    session's: asked, so denied headless) and `project`'s src/key.txt (denied by a rule)."""
    (project / "src").mkdir(parents=True, exist_ok=True)
    here = place.iso.cwd  # where the command runs
    (here / "src").mkdir(parents=True, exist_ok=True)
    inside, outside, secret = (
        project / "src" / "a.txt",
        here / "src" / "b.txt",
        project / "src" / "key.txt",
    )
    script = {
        "rules": [
            {
                "match": "write the files",
                "replies": [
                    {"tool_calls": [write(inside), write(outside), write(secret)]},
                    {"text": "done"},
                ],
            },
            {"match": "*", "replies": [{"text": "hello"}]},
        ]
    }
    with fake_model_in_thread(Scenario.from_dict(script)) as model:
        done = run_rawtrio(
            place.iso,
            "-p",
            "write the files",
            how,
            "--base-url",
            model.base_url,
            "--mode",
            "default",
            "--output-format",
            "events",
            *flags,
            env=place.env(),
        )
    assert done.returncode == 0, done.stderr
    finished = {
        e["call_id"]: e
        for e in map(json.loads, done.stdout.splitlines())
        if e["type"] == "tool_call_finished"
    }
    statuses = sorted((call["status"], call.get("denied_by")) for call in finished.values())
    assert statuses == [("denied", "policy"), ("denied", "rule"), ("ok", None)], done.stdout
    assert inside.read_text() == "x\n"
    assert not outside.exists()  # the command's own src/ is not the session's
    assert not secret.exists()


RULES = ("--allowedTools", "Edit(src/**)", "--disallowedTools", "Edit(src/key.txt)")


@pytest.mark.parametrize("order", ["cwd-first", "cwd-last"])
def test_path_patterns_are_taken_from_cwd(place: Place, how: str, order: str) -> None:
    project = place.iso.root / "project"
    cwd = ("--cwd", str(project))
    project.mkdir()
    write_the_files(
        place, how, project, *((*cwd, *RULES) if order == "cwd-first" else (*RULES, *cwd))
    )


def test_a_resumed_session_takes_them_from_its_own_directory(place: Place, how: str) -> None:
    """`rawtrio -p --resume ID` run elsewhere, without `--cwd`: the session works in its
    stored directory, and so do the patterns."""
    project = place.iso.root / "project"
    project.mkdir()
    with fake_model_in_thread(
        Scenario.from_dict({"rules": [{"match": "*", "replies": [{"text": "hi"}]}]})
    ) as model:
        made = run_rawtrio(
            place.iso,
            "-p",
            "hello",
            how,
            "--cwd",
            str(project),
            "--base-url",
            model.base_url,
            "--output-format",
            "json",
            env=place.env(),
        )
    assert made.returncode == 0, made.stderr
    session = json.loads(made.stdout)["session_id"]
    write_the_files(place, how, project, "--resume", session, *RULES)


class AcpStdio:
    """An editor on `rawtrio acp`'s stdio: JSON-RPC lines; permission requests are
    answered "deny", each noted by the path it asks to write."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.asked: list[str] = []
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self._ids = itertools.count(1)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict[str, Any]) -> Any:
        rid = next(self._ids)
        self._send({"id": rid, "method": method, "params": params})
        while True:
            line = self.lines.get(timeout=LIVENESS_S)
            assert line is not None, "rawtrio acp closed stdout"
            msg = json.loads(line)
            if msg.get("method") == "session/request_permission":
                self.asked.append(msg["params"]["toolCall"]["rawInput"]["path"])
                outcome = {"outcome": "selected", "optionId": "deny"}
                self._send({"id": msg["id"], "result": {"outcome": outcome}})
            elif "method" not in msg and msg.get("id") == rid:
                assert "error" not in msg, msg
                return msg["result"]


def test_an_editor_session_takes_them_from_the_sessions_cwd(place: Place, how: str) -> None:
    """`rawtrio acp --allowedTools 'Edit(src/**)'` started in one directory (an editor
    starts it from anywhere) serves a session whose `cwd` is another: the rule allows that
    session's src/, not the src/ where `rawtrio acp` runs."""
    project = place.iso.root / "project"
    (project / "src").mkdir(parents=True)
    here = place.iso.cwd
    (here / "src").mkdir(parents=True)
    inside, outside = project / "src" / "x.txt", here / "src" / "x.txt"
    script = {
        "rules": [
            {
                "match": "write the files",
                "replies": [{"tool_calls": [write(inside), write(outside)]}, {"text": "done"}],
            }
        ]
    }
    with fake_model_in_thread(Scenario.from_dict(script)) as model:
        proc = subprocess.Popen(
            rawtrio_argv(
                "acp",
                how,
                "--base-url",
                model.base_url,
                "--mode",
                "default",
                "--allowedTools",
                "Edit(src/**)",
            ),
            cwd=here,
            env=place.env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        editor = AcpStdio(proc)
        try:
            editor.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            sid = editor.call("session/new", {"cwd": str(project), "mcpServers": []})["sessionId"]
            prompt = [{"type": "text", "text": "write the files"}]
            answer = editor.call("session/prompt", {"sessionId": sid, "prompt": prompt})
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=LIVENESS_S)
            editor.reader.join(timeout=LIVENESS_S)
            assert proc.stdout is not None
            proc.stdout.close()
    assert answer["stopReason"] == "end_turn"
    assert editor.asked == [str(outside)]  # the session's own src/ was not asked about
    assert inside.read_text() == "x\n"
    assert not outside.exists()
