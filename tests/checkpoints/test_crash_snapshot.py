"""SIGKILLs during snapshots, records, undos and redos leave nothing half-written, and
every recorded change set still restores byte for byte (`stress.checkpoint_crash`)."""

from __future__ import annotations

import pytest

from stress.checkpoint_crash import AIMS, main


def test_sigkills_in_every_phase_leave_a_store_that_restores_byte_for_byte(
    capsys: pytest.CaptureFixture[str],
) -> None:
    kills = len(AIMS)  # one aimed at each phase
    assert main(["--kills", str(kills), "--files", "300", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert f"checkpoint-crash: {kills} SIGKILLs" in out
    assert "0 violations" in out
