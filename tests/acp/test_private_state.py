"""`rawtrio acp --ws` under the usual umask (022): the listener file holding the token, the
database and the folders around them are the user's alone (0600 files, 0700 folders)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.acp.conftest import WsServer
from tests.headless.support import Isolation
from tests.modes import default_umask, not_private


@pytest.fixture(scope="module", autouse=True)
def umask_before_the_server_starts() -> Iterator[None]:
    with default_umask():
        yield


def test_the_listener_file_and_the_state_folder_are_private(
    ws_server: WsServer, iso: Isolation
) -> None:
    state = iso.home / ".local" / "state" / "rawtrio"
    info = json.loads((state / "acp-ws.json").read_text())
    assert info["token"] == ws_server.token
    assert (state / "sessions.db").is_file()
    assert not_private(iso.home / ".local" / "state") == []
