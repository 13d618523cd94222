"""Variables: sources, caching, commands that fail or hang, and redaction."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from rawtrio.config import Redactor, VariableError, VariableResolver
from rawtrio.config.schema import ValueRef, VariableConfig


def resolver(tmp_path: Path, env: dict[str, str] | None = None, **specs: Any) -> VariableResolver:
    configs = {k: VariableConfig.model_validate(v) for k, v in specs.items()}
    return VariableResolver(configs, env=env if env is not None else {}, cwd=tmp_path, grace_s=0.2)


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


async def test_literal_env_and_file_sources(tmp_path: Path) -> None:
    (tmp_path / "key.txt").write_text("from-file\n")
    r = resolver(
        tmp_path,
        {"TOKEN": "from-env"},
        a={"value": "lit"},
        b={"env": "TOKEN"},
        c={"file": str(tmp_path / "key.txt")},
    )
    assert [await r.get(n) for n in "abc"] == ["lit", "from-env", "from-file"]


async def test_missing_environment_variable_is_a_clear_error(tmp_path: Path) -> None:
    r = resolver(tmp_path, b={"env": "NOPE"})
    with pytest.raises(VariableError, match=r"variable 'b' \(env NOPE\): not set"):
        await r.get("b")


async def test_command_output_is_json(tmp_path: Path) -> None:
    r = resolver(
        tmp_path,
        plain={"command": py("print('\"s3cret\"')")},
        picked={"command": py('print(\'{"auth": {"token": "t0ken"}}\')'), "json_key": "auth.token"},
    )
    assert await r.get("plain") == "s3cret"
    assert await r.get("picked") == "t0ken"


async def test_command_printing_garbage_is_an_error_that_hides_secret_output(
    tmp_path: Path,
) -> None:
    (tmp_path / "out").write_text("hunter2-raw")
    code = f"print(open({str(tmp_path / 'out')!r}).read())"
    r = resolver(tmp_path, k={"command": py(code), "secret": True})
    with pytest.raises(VariableError, match="expected JSON on stdout") as info:
        await r.get("k")
    assert "hunter2" not in str(info.value)


async def test_failing_command_reports_exit_status_and_stderr(tmp_path: Path) -> None:
    r = resolver(tmp_path, k={"command": py("import sys; sys.exit('no login')")})
    with pytest.raises(VariableError, match="exited with 1: no login"):
        await r.get("k")


async def test_hanging_command_times_out_and_its_group_is_stopped(tmp_path: Path) -> None:
    marker = tmp_path / "survived"
    code = f"import time, pathlib; time.sleep(30); pathlib.Path({str(marker)!r}).touch()"
    r = resolver(tmp_path, k={"command": py(code), "timeout_s": 0.3})
    with pytest.raises(VariableError, match=r"did not finish within 0\.3 s"):
        await r.get("k")
    assert not marker.exists()


async def test_value_is_cached_and_the_command_runs_once(tmp_path: Path) -> None:
    count = tmp_path / "count"
    code = (
        f"import pathlib; p = pathlib.Path({str(count)!r}); "
        "p.write_text((p.read_text() if p.exists() else '') + 'x'); print('\"v\"')"
    )
    r = resolver(tmp_path, k={"command": py(code)})
    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(r.get, "k")
    assert await r.get("k") == "v"
    assert count.read_text() == "x"


async def test_ttl_rereads_after_expiry(tmp_path: Path, autojump_clock: trio.abc.Clock) -> None:
    env = {"TOKEN": "one"}
    r = resolver(tmp_path, env, k={"env": "TOKEN", "ttl_s": 60})
    assert await r.get("k") == "one"
    env["TOKEN"] = "two"
    await trio.sleep(30)
    assert await r.get("k") == "one"
    await trio.sleep(31)
    assert await r.get("k") == "two"


async def test_secret_values_are_redacted_once_read(tmp_path: Path) -> None:
    r = resolver(tmp_path, {"K": "sk-abc123"}, k={"env": "K", "secret": True}, p={"value": "pub"})
    assert r.redactor.redact("key sk-abc123") == "key sk-abc123"  # not read yet
    await r.get("k")
    await r.get("p")
    assert r.redactor.redact("key sk-abc123 pub") == "key [redacted:k] pub"


async def test_api_key_refs_are_secret_even_without_the_flag(tmp_path: Path) -> None:
    r = resolver(tmp_path, {"ANTHROPIC_API_KEY": "sk-live-1"})
    assert await r.value_of(ValueRef(env="ANTHROPIC_API_KEY"), secret=True, label="api_key") == (
        "sk-live-1"
    )
    assert r.redactor.redact("x sk-live-1") == "x [redacted:api_key]"


def test_redactor_handles_json_escapes_nesting_and_short_values() -> None:
    red = Redactor()
    red.add("pw", 'a"quote"b')
    red.add("tiny", "ab")
    args = {"cmd": json.dumps({"pw": 'a"quote"b'}), "list": ['a"quote"b', "ab"]}
    out = red.redact_json(args)
    assert "quote" not in json.dumps(dict(out), default=list)
    assert out["list"][1] == "ab"


async def test_unknown_variable_lists_known_ones(tmp_path: Path) -> None:
    r = resolver(tmp_path, a={"value": "x"})
    with pytest.raises(VariableError, match=r"known: a"):
        await r.get("zz")
