"""What `rawtrio -p` reads and says before its turn runs: the prompt (`-p PROMPT`, or
standard input for `-`) and one-line notices on stderr.

Apart from `rawtrio.cli.headless_output` (which renders the turn's events) so that an
attached run can read its prompt and talk to the host before the event classes and the
transcript view are loaded (`rawtrio.cli.attach` loads them while the host works).
"""

from __future__ import annotations

import argparse
import sys

from rawtrio.errors import UsageError
from rawtrio.unicode_safety import describe_undecodable


def read_prompt(args: argparse.Namespace) -> str:
    """The prompt of `-p` (standard input for `-`); `UsageError` when it is not text or
    empty."""
    prompt = _read_stdin() if args.prompt == "-" else args.prompt
    problem = describe_undecodable(prompt, "-p: the prompt")
    if problem is not None:
        raise UsageError(problem)
    if not prompt.strip():
        raise UsageError("-p: the prompt is empty")
    return str(prompt)


def _read_stdin() -> str:
    """The prompt from standard input, which must be UTF-8 (a clear error if not)."""
    raw = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"-p -: standard input is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at "
            f"offset {exc.start}); rawtrio takes text in UTF-8"
        ) from None


def say_notice(notice: str) -> None:
    print(f"rawtrio: {notice}", file=sys.stderr)
