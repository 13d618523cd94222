"""`_rawtrio/undo` and `_rawtrio/redo` on a real host (`rawtrio serve`) over its socket."""

from __future__ import annotations

from tests.checkpoints.helpers import make_project, picture, scenario_all_tools
from tests.host.conftest import base_url, host, model, place
from tests.host.support import Client, HostProcess, Place

__all__ = ["base_url", "host", "model", "place"]  # the host fixtures, with this SCENARIO
SCENARIO = scenario_all_tools()


def test_undo_and_redo_over_the_host_protocol_with_a_conflict(
    place: Place, host: HostProcess
) -> None:
    make_project(place.iso.cwd)
    original = picture(place.iso.cwd)
    client = Client.connect(place.paths.socket)
    client.initialize()
    sid = client.start(place, flags={"base_url": place.base_url})["sessionId"]
    client.result("_rawtrio/session/submit", {"sessionId": sid, "text": "change things"})
    assert client.wait_event("turn_ended")["outcome"] == "completed"
    changed = picture(place.iso.cwd)

    (place.iso.cwd / "edit.txt").write_bytes(b"an outside edit\n")
    refused = client.result("_rawtrio/undo", {"sessionId": sid})
    assert refused["applied"] is False
    assert [c["path"] for c in refused["conflicts"]] == ["edit.txt"]
    assert (place.iso.cwd / "edit.txt").read_bytes() == b"an outside edit\n"
    assert (place.iso.cwd / "fresh" / "deep" / "n.txt").exists()  # nothing written

    forced = client.result("_rawtrio/undo", {"sessionId": sid, "force": True})
    assert forced["applied"] is True
    assert forced["turn"] == 1
    assert forced["state"] == "undone"
    assert picture(place.iso.cwd) == original

    redone = client.result("_rawtrio/redo", {"sessionId": sid})
    assert redone["applied"] is True
    assert picture(place.iso.cwd) == changed

    bad = client.call("_rawtrio/undo", {"sessionId": sid, "turn": "one"})
    assert bad["error"]["code"] == -32602
    assert "turn must be an integer" in bad["error"]["message"]
    nothing = client.call("_rawtrio/redo", {"sessionId": sid})
    assert "nothing to redo" in nothing["error"]["message"]
    client.close()
