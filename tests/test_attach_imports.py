"""The attached `rawtrio -p` path's import discipline (docs/benchmarks.md, the attached
headless turn). No timing here — the figures are in `stress/bench/bench_attach.py`; these
check what is loaded: before the client has talked to the host it loads no runtime, no
trio, no configuration schema and none of the event renderer's dataclass modules (those
load in a thread while the host starts the session), and that thread loads nothing heavy
either."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_cold_path import run_python

#: Never loaded by an attached run: what the host does for it.
NOT_ATTACHED = (
    "trio",
    "pydantic",
    "pydantic_core",
    "anthropic",
    "openai",
    "httpx2",
    "sqlite3",
    "rawtrio.runtime.runtime",
    "rawtrio.runtime.session",
    "rawtrio.config.schema",
    "rawtrio.app",
    "rawtrio.redaction",
    "tomllib",  # without a user config file (the [host] table is read only from one)
    "hashlib",  # the socket's name is digested by the built-in SHA-256, without OpenSSL
    # The user config file's folder is found without platformdirs (Linux, XDG or HOME set),
    # the state folder comes from RAWTRIO_STATE_DIR, argparse's width without shutil.
    "platformdirs",
    "tempfile",
    "shutil",
)
#: Loaded by `RendererImport` in its thread, never before: ~100 ms of dataclass building.
RENDERER = (
    "rawtrio.events",
    "rawtrio.messages",
    "rawtrio.runtime.view",
    "rawtrio.store.codec",
    "rawtrio.cli.headless_output",
)


def loaded_after(code: str, tmp_path: Path, names: tuple[str, ...]) -> list[str]:
    probe = (
        f"import sys, json\n{code}\nprint(json.dumps([m for m in {names!r} if m in sys.modules]))\n"
    )
    return list(json.loads(run_python(probe, tmp_path)))


def test_the_attached_client_talks_to_the_host_before_loading_the_renderer(
    tmp_path: Path,
) -> None:
    """Everything the main thread runs before `RendererImport.wait`: the entry, argument
    parsing, logging, the attach decision (host settings, state dir) and the socket
    client."""
    code = (
        "import rawtrio.cli.entry, rawtrio.cli.main, rawtrio.cli.attach, rawtrio.logs\n"
        "import argparse\n"
        "args = rawtrio.cli.main.build_parser().parse_args(['-p', 'hi', '--yes'])\n"
        "rawtrio.logs.log_to_stream(sys.stderr)\n"
        "rawtrio.cli.attach.attach_mode(args)\n"
        "rawtrio.cli.attach.state_dir()\n"
        "rawtrio.cli.attach.session_flags(args), rawtrio.cli.attach.client_env()\n"
    )
    assert loaded_after(code, tmp_path, NOT_ATTACHED + RENDERER) == []


def test_the_renderer_thread_loads_the_renderer_and_nothing_heavy(tmp_path: Path) -> None:
    code = (
        "from rawtrio.cli.attach import RendererImport\n"
        "loading = RendererImport.start()\n"
        "loading.wait()\n"
        "from rawtrio.cli.headless_output import HeadlessOutput, report\n"
        "from rawtrio.store.codec import event_from_json\n"
    )
    assert loaded_after(code, tmp_path, RENDERER) == list(RENDERER)
    # sqlite3 comes with the codec (`rawtrio.store.errors`): light, and off the main thread.
    heavy = tuple(m for m in NOT_ATTACHED if m != "sqlite3")
    assert loaded_after(code, tmp_path, heavy) == []


def test_looking_for_a_host_where_none_runs_loads_no_socket_client(tmp_path: Path) -> None:
    """`host.attach = "auto"` (the default) with no host: the chat and `rawtrio -p` only
    look for the socket file; the socket client (~8 ms) is not loaded for nothing."""
    code = (
        "import rawtrio.cli.main, rawtrio.cli.attaching\n"
        "args = rawtrio.cli.main.build_parser().parse_args(['-p', 'hi'])\n"
        "assert rawtrio.cli.attaching.find_host(args, autostart=False) is None\n"
    )
    assert loaded_after(code, tmp_path, ("rawtrio.host.client",)) == []
