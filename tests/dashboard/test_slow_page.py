"""A page that stops reading its event stream never stalls the turn (I8): it is cut off
from the live session, and when it reads again the stream goes on from the store where
the page is — every event, in order, none twice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.dashboard.support import Dashboard

#: Far more text deltas than a watcher's queue (4,096) and the socket buffers hold.
DELTAS = 8_000
SCENARIO: dict[str, Any] = {
    "rules": [{"match": "*", "replies": [{"text": "x" * DELTAS, "chunk": 1}]}],
}


def test_a_page_that_stops_reading_is_cut_off_and_resumes_without_a_gap(
    dash: Dashboard, work: Path
) -> None:
    sid = dash.new_session(work)["id"]
    with dash.client.stream("GET", f"/api/sessions/{sid}/events") as stream:
        assert stream.status_code == 200
        # The page reads nothing while the whole turn runs: the turn must not wait for it.
        ended = dash.wait_ended(dash.submit(sid, "talk a lot")["operation_id"])
        assert ended["outcome"] == "completed"
        seqs: list[int] = []
        for line in stream.iter_lines():
            if line.startswith("data: ") and '"seq"' in line:
                event = json.loads(line[6:])
                seqs.append(event["seq"])
                if event["type"] == "turn_ended":
                    break
    assert seqs == list(range(1, len(seqs) + 1))
    assert len(seqs) > 4096
    assert "stopped reading" in dash.output()  # it was cut off, and resumed from the store
