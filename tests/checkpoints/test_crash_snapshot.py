"""A SIGKILL during a snapshot leaves nothing half-written (`stress.checkpoint_crash`)."""

from __future__ import annotations

import pytest

from stress.checkpoint_crash import main


def test_sigkill_during_snapshots_leaves_no_torn_object_or_record(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--kills", "3", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "checkpoint-crash: 3 SIGKILLs" in out
    assert "0 violations" in out
