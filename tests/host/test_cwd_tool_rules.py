"""`--allowedTools` / `--disallowedTools` path patterns are the session's: with `--cwd DIR`
they are taken from DIR, not from the directory the command runs in, wherever `--cwd`
stands among the flags; the same for a local run and one attached to a real `rawtrio
serve` (the client maps the patterns and sends the rules). The real program against the
fake model, which asks for writes by absolute path (the form that tells the two apart)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rawtrio.testing.fake_model import Scenario
from tests.headless.support import fake_model_in_thread, run_rawtrio
from tests.host.support import Place


@pytest.fixture(params=["local", "attached"])
def how(request: pytest.FixtureRequest) -> str:
    """`--no-attach`, or `--attach` with a host running (the client must not start one)."""
    if request.param == "attached":
        request.getfixturevalue("host")
    return "--no-attach" if request.param == "local" else "--attach"


def write(path: Path) -> dict[str, Any]:
    return {"name": "write_file", "arguments": {"path": str(path), "content": "x\n"}}


@pytest.mark.parametrize("order", ["cwd-first", "cwd-last"])
def test_path_patterns_are_taken_from_cwd(place: Place, how: str, order: str) -> None:
    project = place.iso.root / "project"
    (project / "src").mkdir(parents=True)
    here = place.iso.cwd  # where the command runs
    (here / "src").mkdir(parents=True)
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
            }
        ]
    }
    rules = ["--allowedTools", "Edit(src/**)", "--disallowedTools", "Edit(src/key.txt)"]
    cwd = ["--cwd", str(project)]
    flags = [*cwd, *rules] if order == "cwd-first" else [*rules, *cwd]
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
