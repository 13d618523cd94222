"""The `[agents.NAME.compaction]` table: checked strictly, with the key path in the error."""

from __future__ import annotations

from pathlib import Path

import pytest

from rawtrio.config import ConfigFileError, load_config


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_compaction_settings_are_read(tmp_path: Path) -> None:
    f = _write(
        tmp_path,
        "[agents.coder.compaction]\nthreshold = 0.6\nkeep_last_turns = 0\n"
        "prune_tool_outputs = false\n",
    )
    config = load_config(f, None).config
    c = config.agents["coder"].compaction
    assert (c.threshold, c.keep_last_turns, c.prune_tool_outputs, c.auto) == (0.6, 0, False, True)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("threshold = 1.5", r"agents\.coder\.compaction\.threshold: .*1\.5"),
        ("keep_last_turns = -1", r"agents\.coder\.compaction\.keep_last_turns: .*-1"),
        ("treshold = 0.5", r"agents\.coder\.compaction\.treshold: unknown key"),
        ('auto = "yes"', r"agents\.coder\.compaction\.auto: "),
    ],
)
def test_bad_compaction_settings_name_the_key(tmp_path: Path, line: str, expected: str) -> None:
    f = _write(tmp_path, f"[agents.coder.compaction]\n{line}\n")
    with pytest.raises(ConfigFileError, match=expected):
        load_config(f, None)
