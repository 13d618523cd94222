"""What running a session's hooks takes once some match an event: the hook process
(`rawtrio.hooks.process`), reading its answer (`rawtrio.hooks.decision`), its receipt
(`HookReceipt`, in `rawtrio.hooks.outcome`) and the outcome of all of them (`combine`).

Loaded by `HookRunner` on the first event that has a matching hook, not with the runner:
every session builds a runner, and most sessions have no hooks.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final, Protocol

import trio

from rawtrio.hooks.decision import HookDecision, Verdict, interpret_exit
from rawtrio.hooks.outcome import HookOutcome, HookReceipt
from rawtrio.hooks.process import HookProcessResult, HookWatch, run_hook_process
from rawtrio.hooks.spec import HookEvent, HookSpec
from rawtrio.processes import EndedBy, ProcessResult

if TYPE_CHECKING:
    from pathlib import Path

    from rawtrio.redaction import Redactor

#: Characters of stdout / stderr kept in a receipt.
RECEIPT_EXCERPT: Final = 2_000


class HookHost(Protocol):
    """What running one hook uses of its session's `HookRunner` (`rawtrio.hooks.runner`,
    which imports this module when a hook first matches, so this one does not import it)."""

    @property
    def session_id(self) -> str: ...
    @property
    def cwd(self) -> Path: ...
    @property
    def grace_s(self) -> float: ...
    @property
    def output_cap(self) -> int: ...
    @property
    def env(self) -> Mapping[str, str] | None: ...
    @property
    def strip_env(self) -> Sequence[str]: ...
    @property
    def redactor(self) -> Redactor: ...
    def publish(self, receipt: HookReceipt) -> None: ...


async def run_one(
    runner: HookHost, hook: HookSpec, subject: str | None, stdin: bytes
) -> tuple[Verdict, HookReceipt]:
    """Run `hook` with `stdin` for `runner`'s session and publish its receipt (also when
    it cannot start or is cancelled: then `trio.Cancelled` propagates)."""
    watch = HookWatch()
    started = trio.current_time()
    try:
        done = await run_hook_process(
            hook.argv(),
            stdin=stdin,
            cwd=runner.cwd,
            session_id=runner.session_id,
            timeout_s=hook.timeout_s,
            grace_s=runner.grace_s,
            output_cap=runner.output_cap,
            env=_env_for(runner, hook),
            strip_env=runner.strip_env,
            watch=watch,
        )
    except OSError as exc:
        verdict = Verdict(HookDecision.WARN, warnings=(f"could not start: {exc}",))
        elapsed = trio.current_time() - started
        receipt = _receipt(hook, subject, verdict, None, "spawn_error", elapsed)
        runner.publish(receipt)
        return verdict, receipt
    except BaseException:
        # Cancelled (or interrupted): the group is already stopped; say so, re-raise.
        verdict = Verdict(HookDecision.CANCELLED)
        elapsed = trio.current_time() - started
        cut = _redacted(runner, watch.result) if watch.result is not None else None
        runner.publish(_receipt(hook, subject, verdict, cut, "cancel", elapsed))
        raise
    done = _redacted(runner, done)
    verdict = _verdict(hook, done)
    receipt = _receipt(hook, subject, verdict, done, str(done.process.ended_by), 0.0)
    runner.publish(receipt)
    return verdict, receipt


def _env_for(runner: HookHost, hook: HookSpec) -> dict[str, str]:
    env = dict(os.environ if runner.env is None else runner.env)
    env.update(hook.env)
    env["RAWTRIO_HOOK_EVENT"] = str(hook.event)
    env["RAWTRIO_PROJECT_DIR"] = str(runner.cwd)
    env["CLAUDE_PROJECT_DIR"] = str(runner.cwd)  # Claude Code scripts use it in paths
    return env


def _redacted(runner: HookHost, done: HookProcessResult) -> HookProcessResult:
    """Secret values from config never reach a receipt or the model."""
    stdout, stderr = runner.redactor.redact(done.stdout), runner.redactor.redact(done.stderr)
    return HookProcessResult(dataclasses.replace(done.process, output=stdout), stderr)


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


def combine(event: HookEvent, results: Sequence[tuple[Verdict, HookReceipt]]) -> HookOutcome:
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
