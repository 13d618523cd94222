"""What `rawtrio -p` reads and says before its turn runs: the prompt (`-p PROMPT`, or
standard input for `-`), what is piped on standard input besides a prompt, and one-line
notices on stderr.

`cat logs.txt | rawtrio -p "explain"` (Claude Code's form): when a prompt is given and
standard input is not a terminal, the piped text follows the prompt after a blank line
(`PIPED_JOIN`), the same for a local and an attached run (the client reads it and sends the
joined prompt). Nothing piped (`/dev/null`, an empty or blank input) leaves the prompt as it
is; so does a pipe on which nothing arrives within `STDIN_WAIT_S`, said on stderr, so an
inherited pipe that never closes cannot hang the run. Once input arrives it is read to its
end. The input must be UTF-8 text (no NUL byte) of at most `MAX_STDIN_BYTES`, for `-p -`
too; otherwise a usage error names what is wrong. `--input-format stream-json` reads its
messages from standard input instead (`UserMessages`).

Apart from `rawtrio.cli.headless_output` (which renders the turn's events) so that an
attached run can read its prompt and talk to the host before the event classes and the
transcript view are loaded (`rawtrio.cli.attach` loads them while the host works).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import sys
from types import EllipsisType
from typing import Final

from rawtrio.errors import UsageError
from rawtrio.unicode_safety import describe_undecodable

#: The most standard input `-p` reads (`-p -`, or piped besides a prompt): about a million
#: tokens, more than any model's context window, and half the host's message limit, so an
#: attached run takes what a local one takes.
MAX_STDIN_BYTES: Final = 4 * 1024 * 1024
#: How long `-p PROMPT` waits for the first piped byte (or the end of the input) before it
#: runs with the prompt alone (as Claude Code, which waits 3 s).
STDIN_WAIT_S: Final = 3.0
#: Between the prompt and the text piped with it.
PIPED_JOIN: Final = "\n\n"
_CHUNK: Final = 64 * 1024


def read_prompt(args: argparse.Namespace) -> str:
    """The prompt of `-p` (standard input for `-`; the prompt then what is piped for `-p
    PROMPT`); `UsageError` when it is not text, too large or empty."""
    fd = _stdin_fd()
    if args.prompt == "-":
        raw = _read_fd(fd) if fd is not None else b""
        prompt = _stdin_text(raw, "-p -: standard input")
    else:
        prompt = args.prompt
        problem = describe_undecodable(prompt, "-p: the prompt")
        if problem is not None:
            raise UsageError(problem)
        piped = _piped_text(fd) if prompt.strip() else None
        if piped is not None:
            prompt = f"{prompt}{PIPED_JOIN}{piped}"
    if not prompt.strip():
        raise UsageError("-p: the prompt is empty")
    return str(prompt)


def _stdin_fd() -> int | None:
    """Standard input's descriptor; None when there is none (closed with `<&-`)."""
    try:
        return sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        return None


def _piped_text(fd: int | None) -> str | None:
    """What is piped on standard input besides `-p PROMPT`: None for a terminal, no
    standard input, nothing (or only blanks) to the end of the input, or nothing within
    `STDIN_WAIT_S` (a notice says so)."""
    if fd is None or os.isatty(fd):
        return None
    ready, _, _ = select.select([fd], [], [], STDIN_WAIT_S)
    if not ready:
        say_notice(
            f"nothing arrived on standard input in {STDIN_WAIT_S:g} s; running with the "
            "prompt alone (redirect stdin from /dev/null to skip the wait, or from a file "
            "when the input is slow to come)"
        )
        return None
    text = _stdin_text(_read_fd(fd), "-p: the input piped on standard input")
    return text if text.strip() else None


def _read_fd(fd: int) -> bytes:
    """Standard input to its end, at most `MAX_STDIN_BYTES` (`UsageError` past that)."""
    chunks: list[bytes] = []
    size = 0
    while chunk := _read_some(fd):
        size += len(chunk)
        if size > MAX_STDIN_BYTES:
            raise UsageError(
                f"-p: standard input is larger than {MAX_STDIN_BYTES // (1024 * 1024)} MiB; "
                "save it to a file and name the file in the prompt"
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _read_some(fd: int) -> bytes:
    try:
        return os.read(fd, _CHUNK)
    except OSError as exc:  # a directory (`< /`), a dead terminal
        raise UsageError(f"-p: cannot read standard input: {exc.strerror or exc}") from None


def _stdin_text(raw: bytes, what: str) -> str:
    """`raw` as text: UTF-8 without a NUL byte, else a `UsageError` naming `what`, the
    byte and its offset."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{what} is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at "
            f"offset {exc.start}); rawtrio takes text in UTF-8"
        ) from None
    if (nul := raw.find(b"\0")) >= 0:
        raise UsageError(
            f"{what} holds a NUL byte (at offset {nul}): binary data, not text; rawtrio "
            "takes text in UTF-8"
        )
    return text


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
