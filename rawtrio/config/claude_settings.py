"""Claude Code's settings files, read for their `hooks` and `permissions` (docs/compat.md).

Files, lowest precedence first, as Claude Code reads them:

1. the user's `~/.claude/settings.json` (`$CLAUDE_CONFIG_DIR/settings.json` when set);
2. the project's `.claude/settings.json`, then `.claude/settings.local.json`, in the nearest
   folder from the working directory up to the repository root that has either.

What is taken, and how:

- `hooks`: every command hook of an event rawtrio has becomes a hook of the `claude-code`
  dialect (Claude Code's matchers, tool names and input shapes; `rawtrio.compat.claude_code`),
  run by `/bin/sh -c` like Claude Code runs it, after rawtrio's own hooks.
- `permissions`: `allow`, `ask` and `deny` entries become rawtrio rules, ordered allow, ask,
  deny (Claude Code's "deny wins, then ask") and placed before rawtrio's own rules, so under
  "last match wins" rawtrio's configuration decides every conflict.
- Everything that cannot be mapped (an event rawtrio does not have, a `prompt` hook, a tool
  rawtrio does not have, `defaultMode`, other keys) is listed in `notices`, never dropped
  without a word.

Trust: a project's files obey the rule of `.rawtrio/config.toml` (`rawtrio.config.trust`):
their hooks and allow rules take effect only once the user trusted that file's content
(`--trust`); until then they are left out with a notice. Their `deny` and `ask` rules, which
only restrict, always apply.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from rawtrio.compat.claude_code import compile_matcher
from rawtrio.config.claude_files import Kind, find_settings_files
from rawtrio.config.errors import ConfigFileError, problem
from rawtrio.config.folders import project_root
from rawtrio.config.safe_read import MAX_CONFIG_BYTES, UnsafeFileError, read_bounded
from rawtrio.config.trust import TrustStore
from rawtrio.hooks.spec import HookEvent

if TYPE_CHECKING:
    from rawtrio.compat.claude_permissions import Effect
    from rawtrio.config.schema import HookConfig, PermissionRuleConfig

#: The hook events rawtrio runs (Claude Code's names, and rawtrio's `Interrupt`); others
#: (`Notification`, …) are reported.
HOOK_EVENTS: Final = frozenset(str(event) for event in HookEvent)
#: The events whose matcher names tools.
TOOL_HOOK_EVENTS: Final = frozenset(
    {"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"}
)
#: Claude Code's default hook timeout, in seconds.
DEFAULT_TIMEOUT_S: Final = 60.0


@dataclass(frozen=True, slots=True)
class ClaudeFile:
    kind: Kind
    path: Path
    #: Shown in origins and notices: `.claude/settings.json` or `~/.claude/settings.json`.
    shown: str
    sha256: str
    #: Whether its hooks and allow rules apply (always for the user's own file).
    trusted: bool


@dataclass(frozen=True, slots=True)
class ClaudeSettings:
    """What the Claude Code settings files contribute to a session."""

    files: tuple[ClaudeFile, ...] = ()
    hooks: tuple[HookConfig, ...] = ()
    #: `hook_origins[i]` says where `hooks[i]` was written.
    hook_origins: tuple[str, ...] = ()
    rules: tuple[PermissionRuleConfig, ...] = ()
    rule_origins: tuple[str, ...] = ()
    #: What was not taken, and why.
    notices: tuple[str, ...] = ()
    #: The project files whose hooks / allow rules wait for trust.
    untrusted: tuple[ClaudeFile, ...] = field(default=())


def load_claude_settings(
    cwd: Path,
    env: Mapping[str, str],
    *,
    trust_store: TrustStore | None = None,
    trust_project: bool = False,
) -> ClaudeSettings:
    """Read the files found from `cwd`. ConfigFileError for a file that is not a JSON
    object; entries that cannot be mapped are notices, not errors (the file is Claude
    Code's, and valid there)."""
    reader = _Reader(cwd.resolve(), env)
    for kind, path in find_settings_files(cwd, env):
        within = None if kind == "user" else project_root(path.parent.parent)
        data, digest = _read_json(path, within)
        shown = _shown(kind, path, env)
        needs = _needs_trust(data) if kind != "user" else ()
        trusted = kind == "user" or not needs
        if not trusted and trust_store is not None:
            if trust_store.is_trusted(path, digest):
                trusted = True
            elif trust_project:
                trust_store.trust(path, digest)
                trusted = True
        file = ClaudeFile(kind, path, shown, digest, trusted)
        reader.read(file, data)
        if not trusted:
            reader.untrusted.append(file)
            reader.notices.append(
                f"{shown} defines {', '.join(needs)}, which run code or grant permissions; "
                "they are ignored until you trust this file (answer the trust prompt, or pass "
                "--trust); its deny and ask rules apply"
            )
    return reader.result()


def _read_json(path: Path, within: Path | None) -> tuple[dict[str, Any], str]:
    try:
        raw = read_bounded(path, limit=MAX_CONFIG_BYTES, within=within)
    except UnsafeFileError as e:
        raise ConfigFileError([problem(path, "", f"cannot read the file: it {e.reason}")]) from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ConfigFileError([problem(path, "", f"expected a JSON object ({e})")]) from None
    if not isinstance(data, dict):
        raise ConfigFileError([problem(path, "", "expected a JSON object", type(data).__name__)])
    return data, hashlib.sha256(raw).hexdigest()


def _shown(kind: Kind, path: Path, env: Mapping[str, str]) -> str:
    if kind != "user":
        return (Path(".claude") / path.name).as_posix()
    home = env.get("HOME")
    with contextlib.suppress(ValueError, RuntimeError):
        return "~/" + path.relative_to(Path(home) if home else Path.home()).as_posix()
    return str(path)


def _needs_trust(data: Mapping[str, Any]) -> tuple[str, ...]:
    reasons = []
    if isinstance(data.get("hooks"), dict) and data["hooks"]:
        reasons.append("hooks")
    perms = data.get("permissions")
    if isinstance(perms, dict) and perms.get("allow"):
        reasons.append("allow rules")
    return tuple(reasons)


class _Reader:
    def __init__(self, cwd: Path, env: Mapping[str, str]) -> None:
        self.cwd = cwd
        self.home = Path(env.get("HOME") or Path.home())
        self.files: list[ClaudeFile] = []
        self.hooks: list[tuple[HookConfig, str]] = []
        self.rules: dict[Effect, list[tuple[PermissionRuleConfig, str]]] = {
            "allow": [],
            "ask": [],
            "deny": [],
        }
        self.notices: list[str] = []
        self.untrusted: list[ClaudeFile] = []

    def result(self) -> ClaudeSettings:
        rules = [*self.rules["allow"], *self.rules["ask"], *self.rules["deny"]]
        return ClaudeSettings(
            files=tuple(self.files),
            hooks=tuple(h for h, _ in self.hooks),
            hook_origins=tuple(o for _, o in self.hooks),
            rules=tuple(r for r, _ in rules),
            rule_origins=tuple(o for _, o in rules),
            notices=tuple(self.notices),
            untrusted=tuple(self.untrusted),
        )

    def read(self, file: ClaudeFile, data: Mapping[str, Any]) -> None:
        self.files.append(file)
        for key in data:
            if key not in ("hooks", "permissions", "$schema"):
                self.notices.append(f"{file.shown}: {key!r} is not read by rawtrio; ignored")
        hooks = data.get("hooks")
        if hooks is not None:
            self._hooks(file, hooks)
        perms = data.get("permissions")
        if perms is not None:
            self._permissions(file, perms)

    def _note(self, file: ClaudeFile, where: str, text: str) -> None:
        self.notices.append(f"{file.shown}: {where}: {text}")

    def _hooks(self, file: ClaudeFile, hooks: Any) -> None:
        if not isinstance(hooks, dict):
            self._note(file, "hooks", "expected an object of events; ignored")
            return
        for event, groups in hooks.items():
            if event not in HOOK_EVENTS:
                self._note(
                    file, f"hooks.{event}", "rawtrio has no such event; its hooks do not run"
                )
                continue
            if not isinstance(groups, list):
                self._note(file, f"hooks.{event}", "expected an array; ignored")
                continue
            for i, group in enumerate(groups):
                self._group(file, event, i, group)

    def _group(self, file: ClaudeFile, event: str, i: int, group: Any) -> None:
        where = f"hooks.{event}[{i}]"
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            self._note(file, where, "expected {matcher, hooks: [...]}; ignored")
            return
        matcher = group.get("matcher", "")
        if not isinstance(matcher, str):
            self._note(file, f"{where}.matcher", "expected a string; the group is ignored")
            return
        try:
            pattern = compile_matcher(matcher)
        except ValueError as exc:
            self._note(file, f"{where}.matcher", f"{exc}; the group is ignored")
            return
        if pattern is not None and event in TOOL_HOOK_EVENTS:
            self._check_tools(file, f"{where}.matcher", matcher, pattern)
        for j, entry in enumerate(group["hooks"]):
            self._hook(file, f"{where}.hooks[{j}]", event, matcher, entry)

    def _check_tools(
        self, file: ClaudeFile, where: str, matcher: str, pattern: re.Pattern[str]
    ) -> None:
        """A matcher no rawtrio tool answers to is named (it would never fire)."""
        from rawtrio.compat.claude_code import TOOL_NAMES

        names = [*TOOL_NAMES.values(), "MultiEdit"]
        if any(pattern.fullmatch(n) for n in names) or "mcp__" in matcher:
            return
        self._note(
            file,
            where,
            f"{matcher!r} names no tool rawtrio has ({', '.join(TOOL_NAMES.values())}, "
            "mcp__server__tool); these hooks never run",
        )

    def _hook(self, file: ClaudeFile, where: str, event: str, matcher: str, entry: Any) -> None:
        if not isinstance(entry, dict):
            self._note(file, where, "expected an object; ignored")
            return
        kind = entry.get("type", "command")
        command = entry.get("command")
        if kind != "command":
            self._note(file, where, f"hooks of type {kind!r} are not supported; ignored")
            return
        if not isinstance(command, str) or not command.strip():
            self._note(file, f"{where}.command", "expected a non-empty string; ignored")
            return
        timeout = entry.get("timeout", DEFAULT_TIMEOUT_S)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            self._note(file, f"{where}.timeout", f"expected seconds > 0, got {timeout!r}; 60 s")
            timeout = DEFAULT_TIMEOUT_S
        if not file.trusted:
            return
        from rawtrio.config.schema import HookConfig  # only for a hook found

        hook = HookConfig.model_construct(
            event=event,
            match=matcher or "*",
            command=command,
            shell=True,
            timeout_s=float(timeout),
            env={},
            dialect="claude-code",
        )
        self.hooks.append((hook, f"{file.shown}: {where}"))

    def _permissions(self, file: ClaudeFile, perms: Any) -> None:
        # Loaded by a settings file's permissions only (or `--allowedTools`): most runs
        # find no such file, and need none of its patterns.
        from rawtrio.compat.claude_permissions import Unmapped, map_entry

        if not isinstance(perms, dict):
            self._note(file, "permissions", "expected an object; ignored")
            return
        for key, value in perms.items():
            if key not in ("allow", "ask", "deny"):
                self._note(
                    file,
                    f"permissions.{key}",
                    "not applied by rawtrio (set permission_mode, confine_paths or rules in "
                    "rawtrio's config instead)",
                )
                continue
            if not isinstance(value, list):
                self._note(file, f"permissions.{key}", "expected an array; ignored")
                continue
            effect: Effect = key
            if effect == "allow" and not file.trusted:
                continue
            for i, entry in enumerate(value):
                where = f"permissions.{key}[{i}]"
                try:
                    mapped = map_entry(
                        entry, effect, base=file.path.parent.parent, cwd=self.cwd, home=self.home
                    )
                except Unmapped as exc:
                    self._note(file, where, f"{entry!r} {exc}; not applied")
                    continue
                from rawtrio.config.schema import PermissionRuleConfig, WhenConfig

                for match, path, regex in mapped:
                    when = WhenConfig.model_construct(path=path, regex=regex) if path else None
                    rule = PermissionRuleConfig.model_construct(
                        match=match, effect=effect, when=when
                    )
                    self.rules[effect].append((rule, f"{file.shown}: {where} {entry}"))
