"""What a finished hook run means: exit code, stdout and stderr → one `Verdict`.

The rules follow Claude Code's hook protocol, so its hook scripts keep working
(docs/hooks.md lists every field and what rawtrio does with it):

- exit 0: continue. Stdout that is a JSON object is read for the fields below; plain
  stdout is context for the model on `SessionStart` and `UserPromptSubmit`, and only
  shown to the user elsewhere. Stdout that starts like JSON but does not parse is a warning.
- exit 2: block, with stderr as the reason given to the model (on events that can block;
  elsewhere it is a warning for the user). Stdout is ignored.
- any other exit code, death by a signal, a timeout: a warning; the session goes on.

JSON fields honoured (exit 0 only): `continue: false` (+ `stopReason`) blocks;
`decision: "block"` (+ `reason`) blocks; `hookSpecificOutput.permissionDecision: "deny"`
(+ `permissionDecisionReason`) and `hookSpecificOutput.decision.behavior: "deny"`
(+ `message`) deny; `hookSpecificOutput.additionalContext` (or the legacy top-level
`additionalContext`) adds context; `systemMessage` is a warning shown to the user;
`suppressOutput: true` keeps stdout out of the receipt. Nothing else has an effect: a hook
of rawtrio's own cannot allow what rules would not, and no hook can rewrite input.

A hook of the `claude-code` dialect (from a Claude Code settings file) is read the way
Claude Code reads it, on top of the above: `permissionDecision: "allow"` / `"ask"`,
`decision.behavior: "allow"` and the legacy `decision: "approve"` set `permission` (what the
permission step does with it is `rawtrio.permissions.policy.with_hook_permission`: deny
rules and plan mode still win); `continue: false` ends the turn (`halt`) after what the
event is about, without blocking a `Stop`.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from rawtrio.hooks.spec import (
    BLOCKING_EVENTS,
    DENYING_EVENTS,
    PLAIN_CONTEXT_EVENTS,
    HookDialect,
    HookEvent,
)
from rawtrio.unicode_safety import scrub_json

#: At most this many characters of one hook's context reach the model.
CONTEXT_CAP: Final = 10_000
_REASON_CAP: Final = 4_000


class HookDecision(enum.StrEnum):
    CONTINUE = "continue"
    BLOCK = "block"
    DENY = "deny"
    WARN = "warn"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class Verdict:
    decision: HookDecision
    #: For block and deny: the reason given to the model.
    reason: str = ""
    context: str | None = None
    #: For the user: failures, ignored fields, `systemMessage`.
    warnings: tuple[str, ...] = ()
    #: `claude-code` dialect only: "allow" or "ask" from `permissionDecision` and its kin.
    permission: str | None = None
    #: `claude-code` dialect only: `continue: false` — the turn ends; `stopReason` says why.
    halt: bool = False
    halt_reason: str = ""
    #: `suppressOutput: true`: stdout is kept out of the receipt.
    suppress_output: bool = False


def interpret_exit(
    event: HookEvent,
    exit_code: int,
    stdout: str,
    stderr: str,
    dialect: HookDialect = "rawtrio",
) -> Verdict:
    """The verdict of a hook that exited on its own with `exit_code`."""
    if exit_code == 2:
        reason = _cap(stderr.strip(), _REASON_CAP)
        if event not in BLOCKING_EVENTS:
            why = f": {reason}" if reason else ""
            return Verdict(
                HookDecision.WARN,
                warnings=(f"exit code 2, but {event} cannot be blocked{why}",),
            )
        denies = event is HookEvent.PERMISSION_REQUEST
        decision = HookDecision.DENY if denies else HookDecision.BLOCK
        return Verdict(decision, reason or "a hook blocked this (exit code 2) without a reason")
    if exit_code != 0:
        detail = stderr.strip() or stdout.strip()
        why = f": {_cap(detail, _REASON_CAP)}" if detail else ""
        return Verdict(HookDecision.WARN, warnings=(f"exit code {exit_code}{why}",))
    return interpret_stdout(event, stdout, dialect)


def interpret_stdout(event: HookEvent, stdout: str, dialect: HookDialect = "rawtrio") -> Verdict:
    """The verdict of a hook that exited 0, from what it printed."""
    text = stdout.strip()
    if not text:
        return Verdict(HookDecision.CONTINUE)
    if text.startswith("{"):
        try:
            data = scrub_json(json.loads(text))  # "\ud800" escapes: U+FFFD instead
        except ValueError as exc:
            return Verdict(
                HookDecision.WARN,
                warnings=(f"stdout looks like JSON but is not valid JSON ({exc}); ignored",),
            )
        if isinstance(data, dict):
            return _JSONReader(event, data, dialect).verdict()
    if event in PLAIN_CONTEXT_EVENTS:
        return Verdict(HookDecision.CONTINUE, context=_cap(text, CONTEXT_CAP))
    return Verdict(HookDecision.CONTINUE)


class _JSONReader:
    """Reads one hook's stdout object; collects what it decides and what was wrong."""

    def __init__(
        self, event: HookEvent, data: Mapping[str, Any], dialect: HookDialect = "rawtrio"
    ) -> None:
        self.event = event
        self.data = data
        self.claude = dialect == "claude-code"
        self.permission: str | None = None
        self.halt = False
        self.halt_reason = ""
        self.warnings: list[str] = []
        self.decision = HookDecision.CONTINUE
        self.reason = ""
        self.context: list[str] = []

    def verdict(self) -> Verdict:
        data = self.data
        if (message := self._str(data, "systemMessage")) is not None:
            self.warnings.append(message)
        if self._get(data, "continue", bool) is False:
            if self.claude:
                # Claude Code: stop after this event; a Stop hook that says so lets it stop.
                self.halt = True
                self.halt_reason = self._str(data, "stopReason") or ""
                if self.event is not HookEvent.STOP:
                    self._block(self.halt_reason, "continue: false")
            else:
                self._block(self._str(data, "stopReason"), "continue: false")
        decision = self._str(data, "decision")
        if decision == "block":
            self._block(self._str(data, "reason"), 'decision: "block"')
        elif decision in ("approve", "allow") and self.claude and self.event in DENYING_EVENTS:
            self._permit("allow")
        elif decision not in (None, "approve", "allow", "undefined"):
            self.warnings.append(f"ignored unknown decision {decision!r}")
        if (legacy := self._str(data, "additionalContext")) is not None:
            self.context.append(legacy)
        specific = self._get(data, "hookSpecificOutput", dict)
        if specific is not None:
            self._specific(specific)
        context = "\n".join(c for c in self.context if c.strip()) or None
        suppress = self._get(data, "suppressOutput", bool) is True
        return Verdict(
            self.decision,
            reason=_cap(self.reason, _REASON_CAP),
            context=_cap(context, CONTEXT_CAP) if context else None,
            warnings=tuple(self.warnings),
            permission=self.permission if self.decision is not HookDecision.DENY else None,
            halt=self.halt,
            halt_reason=_cap(self.halt_reason, _REASON_CAP),
            suppress_output=suppress,
        )

    def _specific(self, specific: Mapping[str, Any]) -> None:
        name = self._str(specific, "hookEventName")
        if name is not None and name != self.event:
            self.warnings.append(
                f"hookSpecificOutput.hookEventName is {name!r}, not {str(self.event)!r}"
            )
        if (context := self._str(specific, "additionalContext")) is not None:
            self.context.append(context)
        permission = self._str(specific, "permissionDecision")
        if permission == "deny":
            self._deny(self._str(specific, "permissionDecisionReason"), "permissionDecision")
        elif permission in ("allow", "ask") and self.claude:
            self._permit(permission)
        elif permission in ("allow", "ask"):
            self.warnings.append(
                f'permissionDecision "{permission}" has no effect in rawtrio '
                "(hooks can only deny; rules and the user decide the rest)"
            )
        elif permission is not None:
            self.warnings.append(f"ignored unknown permissionDecision {permission!r}")
        decision = self._get(specific, "decision", dict)
        if decision is not None:
            behavior = self._str(decision, "behavior")
            if behavior == "deny":
                self._deny(self._str(decision, "message"), "decision.behavior")
            elif behavior == "allow" and self.claude:
                self._permit("allow")
            elif behavior is not None and behavior != "allow":
                self.warnings.append(f"ignored unknown decision.behavior {behavior!r}")

    def _permit(self, permission: str) -> None:
        """A Claude Code hook's "allow" or "ask"; "ask" wins over "allow"."""
        if self.event not in DENYING_EVENTS:
            self.warnings.append(f"permission {permission!r} ignored: {self.event} has no call")
            return
        if self.permission != "ask":
            self.permission = permission

    def _block(self, reason: str | None, what: str) -> None:
        if self.event not in BLOCKING_EVENTS:
            self.warnings.append(f"{what} ignored: {self.event} cannot be blocked")
            return
        if self.event is HookEvent.PERMISSION_REQUEST:
            self._deny(reason, what)
            return
        if self.decision is not HookDecision.DENY:
            self.decision = HookDecision.BLOCK
            self.reason = self._join(reason, f"a hook blocked this ({what})")

    def _deny(self, reason: str | None, what: str) -> None:
        if self.event not in DENYING_EVENTS:
            self.warnings.append(f"{what} ignored: {self.event} has no tool call to deny")
            return
        if self.decision is not HookDecision.DENY:
            self.reason = ""
        self.decision = HookDecision.DENY
        self.reason = self._join(reason, f"a hook denied this ({what})")

    def _join(self, reason: str | None, default: str) -> str:
        text = reason.strip() if reason and reason.strip() else default
        return f"{self.reason}\n{text}" if self.reason else text

    def _get(self, obj: Mapping[str, Any], key: str, kind: type) -> Any:
        value = obj.get(key)
        if value is None:
            return None
        if not isinstance(value, kind):
            self.warnings.append(f"ignored {key!r}: expected {kind.__name__}, got {_type(value)}")
            return None
        return value

    def _str(self, obj: Mapping[str, Any], key: str) -> str | None:
        value: str | None = self._get(obj, key, str)
        return value


def _type(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(
        type(value), "number"
    )


def _cap(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    return text[:cap] + f"\n[... {len(text) - cap} more characters cut by rawtrio]"
