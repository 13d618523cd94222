"""What `rawtrio -p` reads and says before its turn runs: the prompt (`-p PROMPT`, or
standard input for `-`) and one-line notices on stderr.

Apart from `rawtrio.cli.headless_output` (which renders the turn's events) so that an
attached run can read its prompt and talk to the host before the event classes and the
transcript view are loaded (`rawtrio.cli.attach` loads them while the host works).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from types import EllipsisType

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


class UserMessages:
    """`--input-format stream-json`: Claude Code's user messages, one JSON object a line on
    standard input (`{"type": "user", "message": {"role": "user", "content": TEXT or
    [{"type": "text", "text": …}, …]}}`), each the prompt of one turn.

    Read from the file descriptor itself, a line at a time, so a client can write the next
    message after it has read the last turn's result. `next_prompt` blocks until a whole
    line came (for a thread); a loop that must also wake for signals selects on `fd` and
    calls `feed` when it is readable, then `take`."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = bytearray()
        self._eof = False
        self._line = 0

    @classmethod
    def stdin(cls) -> UserMessages:
        return cls(sys.stdin.fileno())

    def feed(self) -> None:
        """Read what the descriptor has (one `read`, which blocks until something came)."""
        chunk = os.read(self.fd, 64 * 1024)
        if chunk:
            self._buffer += chunk
        else:
            self._eof = True

    def take(self) -> str | EllipsisType | None:
        """The next prompt when a whole line is buffered, `None` at the end of the input,
        `...` when more must be read first. `UsageError` for a line that is not a user
        message (naming its number and what is wrong)."""
        while True:
            end = self._buffer.find(b"\n")
            if end < 0 and not (self._eof and self._buffer):
                return None if self._eof else ...
            if end < 0:
                end = len(self._buffer)
            raw = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            self._line += 1
            if raw.strip():
                return parse_user_message(raw, self._line)

    def next_prompt(self) -> str | None:
        """Block until the next prompt (None at the end of the input)."""
        while (taken := self.take()) is ...:
            self.feed()
        return taken


def parse_user_message(raw: bytes, number: int) -> str:
    """The prompt of one `--input-format stream-json` line."""
    where = f"--input-format stream-json: line {number}"
    try:
        message = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"{where} is not valid UTF-8") from None
    except ValueError as exc:
        raise UsageError(f"{where} is not JSON: {exc}") from None
    if not isinstance(message, dict) or message.get("type") != "user":
        kind = message.get("type") if isinstance(message, dict) else type(message).__name__
        raise UsageError(
            f'{where}: expected a {{"type": "user", "message": …}} object, got {kind!r}'
        )
    body = message.get("message")
    content = body.get("content") if isinstance(body, dict) else None
    if isinstance(body, dict) and body.get("role", "user") != "user":
        raise UsageError(f"{where}: message.role must be 'user', got {body.get('role')!r}")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        parts = []
        for i, block in enumerate(content):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind != "text" or not isinstance(block.get("text"), str):
                raise UsageError(
                    f"{where}: message.content[{i}] is a {kind or type(block).__name__!s} "
                    "block; rawtrio takes text blocks here"
                )
            parts.append(block["text"])
        text = "\n\n".join(parts)
    else:
        raise UsageError(f"{where}: message.content must be a string or a list of text blocks")
    problem = describe_undecodable(text, where)
    if problem is not None:
        raise UsageError(problem)
    if not text.strip():
        raise UsageError(f"{where}: the message is empty")
    return text
