"""Variables: named values read only when needed, cached for one runtime, never stored.

A variable comes from a literal, an environment variable, a file, or a command whose
stdout is JSON. Values are read on first use (`VariableResolver.get`), kept in memory for
the runtime's life or `ttl_s` seconds, and never written to the session database or logs.
Values of variables marked `secret` (and every API key) are registered with the runtime's
`Redactor`, which front ends, the transcript writer and tool output pass text through.

A variable's command runs in its own process group with `timeout_s`; on timeout or
cancellation the whole group gets SIGTERM, then SIGKILL after a grace period. A command
that fails, hangs or prints something that is not JSON is a `VariableError` naming the
variable; the session keeps working and the caller decides what to do (a missing API key
ends that request, a hook's env failure fails that hook).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

import trio

from rawtrio.config.safe_read import MAX_VARIABLE_FILE_BYTES, UnsafeFileError, read_bounded
from rawtrio.contracts import DEFAULT_SIGTERM_GRACE_S
from rawtrio.errors import ConfigError
from rawtrio.redaction import Redactor

if TYPE_CHECKING:
    from rawtrio.config.defaults import EnvRef
    from rawtrio.config.schema import ValueRef, VariableConfig

#: Shorter secrets are not redacted: replacing "ab" everywhere would wreck every text.
_EXCERPT: Final = 60


class VariableError(ConfigError):
    """A variable could not be read. `name` is the variable, `source` how it is read."""

    def __init__(self, name: str, source: str, reason: str) -> None:
        self.name = name
        self.source = source
        self.reason = reason
        super().__init__(f"variable {name!r} ({source}): {reason}")


class VariableResolver:
    """Reads variables for one runtime; share one per process."""

    def __init__(
        self,
        specs: Mapping[str, VariableConfig],
        *,
        env: Mapping[str, str],
        cwd: Path,
        redactor: Redactor | None = None,
        grace_s: float = DEFAULT_SIGTERM_GRACE_S,
    ) -> None:
        self._specs = dict(specs)
        self._env = env
        self._cwd = cwd
        self.redactor = redactor if redactor is not None else Redactor()
        self._grace_s = grace_s
        self._cache: dict[str, tuple[str, float]] = {}
        self._locks: dict[str, trio.Lock] = {}

    @property
    def environ(self) -> Mapping[str, str]:
        """The environment variables are read from (the session's)."""
        return self._env

    async def get(self, name: str, *, secret: bool = False) -> str:
        """The variable's value; `secret=True` redacts it even if not marked secret."""
        spec = self._specs.get(name)
        if spec is None:
            known = ", ".join(sorted(self._specs)) or "none defined"
            raise VariableError(name, "unknown", f"no such variable (known: {known})")
        lock = self._locks.setdefault(name, trio.Lock())
        async with lock:  # two callers at once run the command once
            cached = self._cache.get(name)
            if cached is not None and trio.current_time() < cached[1]:
                return cached[0]
            value = await self._read(name, spec)
            expires = trio.current_time() + spec.ttl_s if spec.ttl_s is not None else float("inf")
            self._cache[name] = (value, expires)
        if spec.secret or secret:
            self.redactor.add(name, value)
        return value

    async def value_of(
        self, ref: ValueRef | EnvRef, *, secret: bool = False, label: str = ""
    ) -> str:
        """Resolve a config value: literal, `{var = ...}` or `{env = ...}`."""
        if ref.var is not None:
            return await self.get(ref.var, secret=secret)
        if ref.env is not None:
            value = self._env.get(ref.env)
            if value is None:
                raise VariableError(
                    label or ref.env, f"env {ref.env}", "not set in the environment"
                )
            if secret:
                self.redactor.add(label or ref.env, value)
            return value
        assert ref.value is not None
        if secret:
            self.redactor.add(label or "literal", ref.value)
        return ref.value

    async def environment(self, refs: Mapping[str, ValueRef]) -> dict[str, str]:
        """An env mapping for a hook or MCP server; every value is treated as a secret."""
        return {k: await self.value_of(v, secret=True, label=k) for k, v in refs.items()}

    def forget(self) -> None:
        """Drop every cached value (they are read again on next use)."""
        self._cache.clear()

    async def _read(self, name: str, spec: VariableConfig) -> str:
        if spec.value is not None:
            return spec.value
        if spec.env is not None:
            value = self._env.get(spec.env)
            if value is None:
                raise VariableError(name, f"env {spec.env}", "not set in the environment")
            return value
        if spec.file is not None:
            try:
                raw = await trio.to_thread.run_sync(
                    functools.partial(read_bounded, Path(spec.file), limit=MAX_VARIABLE_FILE_BYTES),
                    abandon_on_cancel=True,
                )
                text = raw.decode("utf-8")
            except UnsafeFileError as e:
                raise VariableError(name, f"file {spec.file}", e.reason) from None
            except UnicodeDecodeError:
                raise VariableError(name, f"file {spec.file}", "not UTF-8 text") from None
            return text.strip()
        assert spec.command is not None
        return await self._run(name, spec)

    async def _run(self, name: str, spec: VariableConfig) -> str:
        argv = spec.command or []
        source = f"command {' '.join(argv)}"

        async def stop_group(proc: trio.Process) -> None:
            _signal_group(proc.pid, signal.SIGTERM)
            with trio.move_on_after(self._grace_s):
                await proc.wait()
                return
            _signal_group(proc.pid, signal.SIGKILL)

        try:
            with trio.fail_after(spec.timeout_s):
                done = await trio.run_process(
                    argv,
                    stdin=subprocess.DEVNULL,
                    capture_stdout=True,
                    capture_stderr=True,
                    check=False,
                    cwd=self._cwd,
                    env=dict(self._env),
                    start_new_session=True,
                    deliver_cancel=stop_group,
                )
        except trio.TooSlowError:
            raise VariableError(
                name, source, f"did not finish within {spec.timeout_s:g} s (timeout_s)"
            ) from None
        except OSError as e:
            raise VariableError(name, source, f"cannot start it: {e.strerror or e}") from None
        if done.returncode != 0:
            err = done.stderr.decode("utf-8", "replace").strip()[-200:]
            raise VariableError(name, source, f"exited with {done.returncode}: {err}")
        return _from_json(name, source, done.stdout, spec)


def _from_json(name: str, source: str, stdout: bytes, spec: VariableConfig) -> str:
    try:
        data = json.loads(stdout)
    except ValueError:
        # Never echo a secret's output into an error message.
        got = (
            f"{len(stdout)} bytes"
            if spec.secret
            else repr(stdout[:_EXCERPT].decode("utf-8", "replace"))
        )
        raise VariableError(
            name,
            source,
            f'expected JSON on stdout (a string like "value", or an object with json_key), '
            f"got {got}",
        ) from None
    if spec.json_key is not None:
        for part in spec.json_key.split("."):
            if not isinstance(data, dict) or part not in data:
                raise VariableError(name, source, f"the JSON output has no {spec.json_key!r}")
            data = data[part]
    if isinstance(data, str):
        return data
    if isinstance(data, bool | int | float):
        return json.dumps(data)
    raise VariableError(
        name, source, "expected a JSON string or number (set json_key to pick from an object)"
    )


def _signal_group(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signum)
