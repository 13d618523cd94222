"""The base system prompt, fixed when a session is created (docs/contracts.md).

The whole prompt — base, agent prompt, AGENTS.md, skills list — passes secret redaction
(`redacted_prompt`) before the session stores or sends it: those parts come from files,
some of them a project's, and a secret in them must not reach the provider or the database.
"""

from __future__ import annotations

import platform
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rawtrio.redaction import Redactor

BASE_PROMPT = """\
You are rawtrio, a coding agent working in the user's project directory.
You read and edit files and run shell commands with the tools you are given, to do what the
user asks. Prefer small, verifiable steps: read before you edit, run the tests after.
Keep answers short and concrete. Paths are relative to the working directory unless absolute.
If a tool result says a call was cancelled or not run, do not assume its effect happened."""


def system_prompt(cwd: Path, override: str | None = None) -> str:
    base = override if override is not None else BASE_PROMPT
    env = (
        f"Working directory: {cwd}\n"
        f"Platform: {platform.system()} {platform.release()}\n"
        f"Date: {time.strftime('%Y-%m-%d')}"
    )
    return f"{base}\n\n{env}"


def redacted_prompt(prompt: str, redactor: Redactor) -> str:
    """`prompt` with every secret the redactor knows replaced by its marker."""
    return redactor.redact(prompt)
