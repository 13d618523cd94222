"""A session resumed from another directory (`rawtrio -p --resume ID` run elsewhere, no
`--cwd`) works under its own project's configuration: the project files of the session's
directory apply, those of the directory the command runs in do not — for a local run and
for one attached to a real `rawtrio serve` (the host resolves the session's directory with
the client's flags and environment). The real program against the fake model, with project
permission rules (deny rules apply without trust) as the setting that tells the two apart."""

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


def deny_writes_to(folder: Path, name: str) -> None:
    """A project config in `folder` whose rule denies `write_file` to files named `name`."""
    (folder / ".rawtrio").mkdir(parents=True)
    (folder / ".rawtrio" / "config.toml").write_text(
        "[[agents.default.permissions]]\n"
        'match = "write_file"\n'
        'effect = "deny"\n'
        f"when = {{ path = \"path\", regex = '{name}$' }}\n",
        encoding="utf-8",
    )


def write(name: str) -> dict[str, Any]:
    return {"name": "write_file", "arguments": {"path": name, "content": "x\n"}}


SCRIPT = {
    "rules": [
        {
            "match": "write the files",
            "replies": [{"tool_calls": [write("mine.txt"), write("theirs.txt")]}, {"text": "ok"}],
        },
        {"match": "*", "replies": [{"text": "hello"}]},
    ]
}


def test_a_resumed_session_takes_its_own_projects_configuration(place: Place, how: str) -> None:
    project = place.iso.root / "project"  # the session's directory
    here = place.iso.cwd  # where the resuming command runs
    project.mkdir()
    deny_writes_to(project, "mine.txt")
    deny_writes_to(here, "theirs.txt")
    with fake_model_in_thread(Scenario.from_dict(SCRIPT)) as model:

        def rawtrio(*args: str) -> Any:
            done = run_rawtrio(
                place.iso,
                "-p",
                *args,
                how,
                "--base-url",
                model.base_url,
                "--yes",
                "--output-format",
                "events",
                env=place.env(),
            )
            assert done.returncode == 0, done.stderr
            return [json.loads(line) for line in done.stdout.splitlines()]

        made = rawtrio("hello", "--cwd", str(project))
        session = next(e["session_id"] for e in made if e.get("session_id"))
        events = rawtrio("write the files", "--resume", session)
    finished = {
        e["call_id"]: (e["status"], e.get("denied_by"))
        for e in events
        if e["type"] == "tool_call_finished"
    }
    started = {
        call_id: arguments["path"]
        for e in events
        if e["type"] == "assistant_message"
        for call_id, _name, arguments in e["tool_calls"]
    }
    by_path = {started[call]: outcome for call, outcome in finished.items()}
    assert by_path == {"mine.txt": ("denied", "rule"), "theirs.txt": ("ok", None)}, events
    assert not (project / "mine.txt").exists()  # the session's project denies it
    assert (project / "theirs.txt").read_text() == "x\n"  # the run directory's rule: not here
    assert not (here / "theirs.txt").exists()


def test_the_run_directorys_broken_config_is_not_read_for_a_resume(place: Place, how: str) -> None:
    """The run directory's project file is not the session's: a broken one there neither
    stops `--resume ID` nor is reported."""
    project = place.iso.root / "project"
    here = place.iso.cwd
    project.mkdir()
    (here / ".rawtrio").mkdir(parents=True)
    (here / ".rawtrio" / "config.toml").write_text("max_steps = [not toml\n", encoding="utf-8")
    with fake_model_in_thread(Scenario.from_dict(SCRIPT)) as model:

        def rawtrio(*args: str) -> Any:
            return run_rawtrio(
                place.iso,
                "-p",
                *args,
                how,
                "--base-url",
                model.base_url,
                "--output-format",
                "json",
                env=place.env(),
            )

        made = rawtrio("hello", "--cwd", str(project))
        assert made.returncode == 0, made.stderr
        session = json.loads(made.stdout)["session_id"]
        resumed = rawtrio("hello again", "--resume", session)
        broken = rawtrio("hello")  # a new session here: its own project file is read
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["session_id"] == session
    assert "config.toml" not in resumed.stderr
    assert broken.returncode == 2, broken.stderr
    assert ".rawtrio/config.toml" in broken.stderr
