"""Checkpoints through the whole program: a headless run changes files, `sessions show`
lists its change set, `rawtrio undo` puts the files back — each a real process."""

from __future__ import annotations

import json
from pathlib import Path

from rawtrio.testing.fake_model import Scenario
from tests.checkpoints.helpers import make_project, picture, scenario_all_tools
from tests.headless.support import Isolation, fake_model_in_thread, run_rawtrio


def test_a_headless_run_is_listed_and_undone(tmp_path: Path) -> None:
    iso = Isolation(tmp_path)
    iso.env()
    make_project(iso.cwd)
    original = picture(iso.cwd)
    with fake_model_in_thread(Scenario.from_dict(scenario_all_tools())) as server:
        done = run_rawtrio(
            iso,
            "-p",
            "change things",
            "--base-url",
            server.base_url,
            "--model",
            "test-model",
            "--output-format",
            "json",
            env={"ANTHROPIC_API_KEY": "test-key"},
        )
    assert done.returncode == 0, done
    [row] = json.loads(run_rawtrio(iso, "sessions", "list", "--json").stdout)
    shown = run_rawtrio(iso, "sessions", "show", row["id"])
    assert shown.returncode == 0, shown
    assert "checkpoints (rawtrio undo --session ID --turn N):" in shown.stdout
    assert "#1  8 files changed (+6 \u22124)  [applied]" in shown.stdout
    assert "A fresh/deep/n.txt  (+1 \u22120)" in shown.stdout
    assert "D gone.txt" in shown.stdout
    undone = run_rawtrio(iso, "undo")
    assert undone.returncode == 0, undone
    assert picture(iso.cwd) == original
    assert "[undone]" in run_rawtrio(iso, "sessions", "show", row["id"]).stdout
