"""`/cost` and `/compact` in the line chat, and usage/cost in headless json, end to end:
the real program in a subprocess, configured by a file, against the fake model server."""

from __future__ import annotations

import json
from pathlib import Path

from rawtrio.context.compaction import COMPACTION_MARKER
from rawtrio.testing.fake_model import Scenario
from tests.context.support import SUMMARY
from tests.headless.support import Isolation, fake_model_in_thread, run_rawtrio

KEYS = {"ANTHROPIC_API_KEY": "test-key"}
SCENARIO = {
    "rules": [
        {"match": "@compaction", "replies": [{"text": SUMMARY}]},
        {"match": "*", "replies": [{"text": "Fine, noted. " * 30}]},
    ]
}
CONFIG = """
default_model = "fake"

[models.fake]
provider = "anthropic"
model_id = "test-model"
base_url = "{url}"
context_window = 50000
prices = {{ input = 3.0, output = 15.0, cache_read = 0.3, cache_write = 3.75 }}

[agents.default.compaction]
keep_last_turns = 1
"""


def _config(iso: Isolation, url: str) -> Path:
    path = iso.root / "config.toml"
    path.write_text(CONFIG.format(url=url))
    return path


def test_cost_and_compact_in_the_line_chat(tmp_path: Path) -> None:
    iso = Isolation(tmp_path)
    with fake_model_in_thread(Scenario.from_dict(SCENARIO)) as server:
        config = _config(iso, server.base_url)
        lines = [f"note number {i}: " + "remember this detail. " * 20 for i in range(3)]
        stdin = "\n".join([*lines, "/cost", "/compact the details", "/cost", ""])
        done = run_rawtrio(iso, "--config", str(config), env=KEYS, stdin=stdin)
        summary_requests = [
            r for r in server.requests if (r.user_text or "").startswith(COMPACTION_MARKER)
        ]
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.count("cost: $") == 2
    assert "context: " in out
    assert "of 50000 tokens" in out
    assert "(compaction compacted:" in out
    assert len(summary_requests) == 1
    assert "Focus the summary on: the details" in (summary_requests[0].user_text or "")


def test_headless_json_reports_cost(tmp_path: Path) -> None:
    iso = Isolation(tmp_path)
    with fake_model_in_thread(Scenario.from_dict(SCENARIO)) as server:
        config = _config(iso, server.base_url)
        done = run_rawtrio(
            iso, "--config", str(config), "-p", "hello", "--output-format", "json", env=KEYS
        )
    assert done.returncode == 0, done.stderr
    usage = json.loads(done.stdout)["usage"]
    expected = (
        usage["input_tokens"] * 3.0
        + usage["output_tokens"] * 15.0
        + usage["cache_read_tokens"] * 0.3
        + usage["cache_write_tokens"] * 3.75
    ) / 1e6
    assert usage["cost_usd"] > 0
    assert abs(usage["cost_usd"] - expected) < 1e-9
    assert usage["session_cost_usd"] == usage["cost_usd"]
    assert usage["context_window"] == 50000
    assert usage["context_tokens"] > 0
