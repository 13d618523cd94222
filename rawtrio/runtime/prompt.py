"""The base system prompt, fixed when a session is created (§3a)."""

from __future__ import annotations

import platform
import time
from pathlib import Path

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
