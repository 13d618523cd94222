"""Run the hooks bound to an event and combine what they decide.

`HookRunner.run(event, payload)` runs every matching hook, one after another in the
configured order — sequentially on purpose: hooks on the same event often act on the same
files (format, then lint), and their order, their receipts and their effects must not
depend on scheduling. Every hook runs even when an earlier one blocked, as in Claude Code,
so logging and auditing hooks always see the event.

The runner is awaited by the task the event belongs to (the turn's task for turn events),
so it lives inside the session's nursery and the turn's cancel scope: a cancelled turn
stops the running hook's process group (shielded, bounded), reports a `cancelled` receipt
through `on_receipt`, and `trio.Cancelled` propagates (I4). A hook that cannot start,
hangs, prints garbage or dies by a signal yields a warning receipt; `run` itself never
raises for a hook's misbehaviour.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import trio

from rawtrio.compat.claude_code import claude_payload
from rawtrio.contracts import DEFAULT_SIGTERM_GRACE_S
from rawtrio.frozen import thaw
from rawtrio.hooks.decision import HookDecision, Verdict, interpret_exit
from rawtrio.hooks.process import HookProcessResult, HookWatch, run_hook_process
from rawtrio.hooks.spec import MATCH_FIELD, HookEvent, HookSpec
from rawtrio.processes import EndedBy, ProcessResult
from rawtrio.redaction import Redactor
from rawtrio.tools.base import ToolSettings

#: Bytes of stdout and of stderr kept per hook run (head and tail).
HOOK_OUTPUT_CAP: Final = 64_000
#: Characters of stdout / stderr kept in a receipt.
RECEIPT_EXCERPT: Final = 2_000
#: Removed from every hook's environment: the same patterns as for tools' processes.
DEFAULT_STRIP_ENV: Final = ToolSettings().strip_env


@dataclass(frozen=True, slots=True)
class HookReceipt:
    """What one hook run did; meant for the display history (never the model context)."""

    hook: str
    event: HookEvent
    #: The match subject: tool id for tool events, source / trigger where those match.
    subject: str | None
    decision: HookDecision
    #: "exit", "timeout", "cancel" or "spawn_error".
    ended_by: str
    exit_code: int | None
    signal: int | None
    elapsed_s: float
    stdout: str
    stderr: str
    #: One line for people: what happened and why.
    summary: str


@dataclass(frozen=True, slots=True)
class HookOutcome:
    """All matching hooks of one event, combined. Empty when none matched."""

    event: HookEvent
    blocked: bool = False
    block_reason: str = ""
    denied: bool = False
    deny_reason: str = ""
    #: Texts for the model, in hook order (see docs/hooks.md for where each event puts them).
    context: tuple[str, ...] = ()
    #: Texts for the user (failures, `systemMessage`); never sent to the model.
    warnings: tuple[str, ...] = ()
    receipts: tuple[HookReceipt, ...] = ()
    #: From Claude Code hooks: "allow" or "ask" for the call (None: no say; a deny is
    #: `denied`). `rawtrio.permissions.policy.with_hook_permission` applies it.
    permission: str | None = None
    #: From Claude Code hooks (`continue: false`): the turn ends after this event.
    halted: bool = False
    halt_reason: str = ""

    @property
    def stopped(self) -> bool:
        """Blocked or denied: the action the event is about should not go ahead."""
        return self.blocked or self.denied

    @property
    def reason(self) -> str:
        """The reason(s) to give the model when `stopped`, deny first."""
        return "\n".join(r for r in (self.deny_reason, self.block_reason) if r)

    def context_text(self) -> str | None:
        """The hooks' context as one text block for the model, or None when there is none."""
        if not self.context:
            return None
        return f"[rawtrio: context from {self.event} hooks]\n" + "\n\n".join(self.context)


class HookRunner:
    """The hooks of one session. `on_receipt` gets each receipt as soon as it exists,
    including the receipt of a run cut by a cancellation; it must not block or raise."""

    def __init__(
        self,
        hooks: Iterable[HookSpec],
        *,
        session_id: str,
        cwd: Path,
        grace_s: float = DEFAULT_SIGTERM_GRACE_S,
        output_cap: int = HOOK_OUTPUT_CAP,
        env: Mapping[str, str] | None = None,
        strip_env: Sequence[str] = DEFAULT_STRIP_ENV,
        redactor: Redactor | None = None,
        on_receipt: Callable[[HookReceipt], None] | None = None,
    ) -> None:
        self.hooks = tuple(hooks)
        self.session_id = session_id
        self.cwd = cwd
        self.grace_s = grace_s
        self.output_cap = output_cap
        self.env = env
        self.strip_env = tuple(strip_env)
        self.on_receipt = on_receipt
        self.redactor = redactor if redactor is not None else Redactor()

    def matching(self, event: HookEvent, payload: Mapping[str, Any]) -> tuple[HookSpec, ...]:
        subject = _subject(event, payload)
        return tuple(h for h in self.hooks if h.event is event and h.matches(subject))

    def input_for(
        self, event: HookEvent, payload: Mapping[str, Any], hook: HookSpec | None = None
    ) -> dict[str, Any]:
        """The JSON object a hook reads on stdin: the common fields, then `payload` — in
        Claude Code's names and shapes for a `claude-code` hook."""
        body = thaw(payload)
        if hook is not None and hook.dialect == "claude-code":
            body = claude_payload(body, self.cwd)
        return {
            **body,
            "session_id": self.session_id,
            "cwd": str(self.cwd),
            "hook_event_name": str(event),
        }

    async def run(self, event: HookEvent, payload: Mapping[str, Any]) -> HookOutcome:
        """Run the hooks matching `event` and `payload` (built with `rawtrio.hooks.payloads`)."""
        event = HookEvent(event)
        hooks = self.matching(event, payload)
        if not hooks:
            return HookOutcome(event)
        subject = _subject(event, payload)
        results = []
        for h in hooks:
            stdin = json.dumps(self.input_for(event, payload, h), ensure_ascii=False).encode()
            results.append(await self._run_one(h, subject, stdin))
        return _combine(event, results)

    async def _run_one(
        self, hook: HookSpec, subject: str | None, stdin: bytes
    ) -> tuple[Verdict, HookReceipt]:
        watch = HookWatch()
        started = trio.current_time()
        try:
            done = await run_hook_process(
                hook.argv(),
                stdin=stdin,
                cwd=self.cwd,
                session_id=self.session_id,
                timeout_s=hook.timeout_s,
                grace_s=self.grace_s,
                output_cap=self.output_cap,
                env=self._env_for(hook),
                strip_env=self.strip_env,
                watch=watch,
            )
        except OSError as exc:
            verdict = Verdict(HookDecision.WARN, warnings=(f"could not start: {exc}",))
            elapsed = trio.current_time() - started
            receipt = _receipt(hook, subject, verdict, None, "spawn_error", elapsed)
            self._publish(receipt)
            return verdict, receipt
        except BaseException:
            # Cancelled (or interrupted): the group is already stopped; say so, re-raise.
            verdict = Verdict(HookDecision.CANCELLED)
            elapsed = trio.current_time() - started
            cut = self._redacted(watch.result) if watch.result is not None else None
            self._publish(_receipt(hook, subject, verdict, cut, "cancel", elapsed))
            raise
        done = self._redacted(done)
        verdict = _verdict(hook, done)
        receipt = _receipt(hook, subject, verdict, done, str(done.process.ended_by), 0.0)
        self._publish(receipt)
        return verdict, receipt

    def _env_for(self, hook: HookSpec) -> dict[str, str]:
        env = dict(os.environ if self.env is None else self.env)
        env.update(hook.env)
        env["RAWTRIO_HOOK_EVENT"] = str(hook.event)
        env["RAWTRIO_PROJECT_DIR"] = str(self.cwd)
        env["CLAUDE_PROJECT_DIR"] = str(self.cwd)  # Claude Code scripts use it in paths
        return env

    def _redacted(self, done: HookProcessResult) -> HookProcessResult:
        """Secret values from config never reach a receipt or the model."""
        stdout, stderr = self.redactor.redact(done.stdout), self.redactor.redact(done.stderr)
        return HookProcessResult(dataclasses.replace(done.process, output=stdout), stderr)

    def _publish(self, receipt: HookReceipt) -> None:
        if self.on_receipt is not None:
            self.on_receipt(receipt)


def _subject(event: HookEvent, payload: Mapping[str, Any]) -> str | None:
    name = MATCH_FIELD.get(event)
    value = payload.get(name) if name is not None else None
    return value if isinstance(value, str) else None


def _verdict(hook: HookSpec, done: HookProcessResult) -> Verdict:
    p = done.process
    if p.ended_by is EndedBy.TIMEOUT:
        how = f"; stopped with {p.stopped_with}" if p.stopped_with else ""
        text = f"timed out after {hook.timeout_s:g} s{how}; its result is ignored"
        return Verdict(HookDecision.WARN, warnings=(text,))
    if p.exit_code is None:
        return Verdict(HookDecision.WARN, warnings=(f"{p.status_text}; its result is ignored",))
    return interpret_exit(hook.event, p.exit_code, done.stdout, done.stderr, hook.dialect)


def _receipt(
    hook: HookSpec,
    subject: str | None,
    verdict: Verdict,
    done: HookProcessResult | None,
    ended_by: str,
    elapsed_s: float,
) -> HookReceipt:
    p = done.process if done is not None else None
    return HookReceipt(
        hook=hook.label,
        event=hook.event,
        subject=subject,
        decision=verdict.decision,
        ended_by=ended_by,
        exit_code=p.exit_code if p else None,
        signal=p.signal if p else None,
        elapsed_s=round(p.elapsed_s if p else elapsed_s, 3),
        stdout=_excerpt(done.stdout if done and not verdict.suppress_output else ""),
        stderr=_excerpt(done.stderr if done else ""),
        summary=_summary(hook, verdict, p),
    )


def _summary(hook: HookSpec, verdict: Verdict, p: ProcessResult | None) -> str:
    what = f"{hook.event} hook {hook.label!r}"
    status = p.status_text if p is not None else "not started"
    if verdict.decision is HookDecision.CANCELLED:
        how = f", stopped with {p.stopped_with}" if p is not None and p.stopped_with else ""
        return f"{what}: cancelled with its turn ({status}{how})"
    if verdict.decision in (HookDecision.BLOCK, HookDecision.DENY):
        verb = "blocked" if verdict.decision is HookDecision.BLOCK else "denied"
        return f"{what}: {verb} ({status}): {_first_line(verdict.reason)}"
    if verdict.decision is HookDecision.WARN:
        return f"{what}: warning: {_first_line(verdict.warnings[0])}"
    extra = "; added context" if verdict.context else ""
    return f"{what}: ok ({status}){extra}"


def _combine(event: HookEvent, results: Sequence[tuple[Verdict, HookReceipt]]) -> HookOutcome:
    blocks = [v.reason for v, _ in results if v.decision is HookDecision.BLOCK]
    denies = [v.reason for v, _ in results if v.decision is HookDecision.DENY]
    warnings = [f"{r.event} hook {r.hook!r}: {w}" for v, r in results for w in v.warnings]
    permissions = {v.permission for v, _ in results}
    halts = [v for v, _ in results if v.halt]
    return HookOutcome(
        event=event,
        blocked=bool(blocks),
        block_reason="\n".join(blocks),
        denied=bool(denies),
        deny_reason="\n".join(denies),
        context=tuple(v.context for v, _ in results if v.context),
        warnings=tuple(warnings),
        receipts=tuple(r for _, r in results),
        permission="ask" if "ask" in permissions else "allow" if "allow" in permissions else None,
        halted=bool(halts),
        halt_reason="\n".join(v.halt_reason for v in halts if v.halt_reason),
    )


def _excerpt(text: str) -> str:
    if len(text) <= RECEIPT_EXCERPT:
        return text
    half = RECEIPT_EXCERPT // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters ...]\n{text[-half:]}"


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 200 else line[:197] + "..."
