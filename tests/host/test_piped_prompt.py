"""`cat file | rawtrio -p PROMPT` (Claude Code's form): the model gets the prompt, a blank
line, then the piped text; the same for a local run and one attached to a real `rawtrio
serve` (the client reads standard input and sends the joined prompt). Nothing piped leaves
the prompt alone; input that is not text, or too large, is a usage error naming it."""

from __future__ import annotations

import os
import subprocess
from typing import IO, Any

import pytest

from rawtrio.cli.headless_input import MAX_STDIN_BYTES
from rawtrio.testing.fake_model import FakeModelServer
from tests.headless.support import LIVENESS_S, Finished, rawtrio_argv
from tests.host.conftest import scenario
from tests.host.support import Place

SCENARIO: dict[str, Any] = scenario()


@pytest.fixture(params=["local", "attached"])
def how(request: pytest.FixtureRequest) -> str:
    """`--no-attach`, or `--attach` with a host running (the client must not start one)."""
    if request.param == "attached":
        request.getfixturevalue("host")
    return "--no-attach" if request.param == "local" else "--attach"


def run(place: Place, *args: str, stdin: bytes | int | IO[Any]) -> Finished:
    """The real program with `stdin` (bytes to pipe, or a descriptor / file to hand over)."""
    piped = stdin if isinstance(stdin, bytes) else None
    done = subprocess.run(
        rawtrio_argv(*args),
        cwd=place.iso.cwd,
        env=place.env(),
        input=piped,
        stdin=None if isinstance(stdin, bytes) else stdin,
        capture_output=True,
        timeout=LIVENESS_S,
        start_new_session=True,
        check=False,
    )
    return Finished(
        done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    )


def prompts_starting(model: FakeModelServer, start: str) -> list[str]:
    """The user text of the turns' first requests whose prompt starts with `start`."""
    return [
        r.user_text
        for r in model.requests
        if r.user_text is not None and r.user_text.startswith(start) and r.step == 0
    ]


def test_piped_text_follows_the_prompt_after_a_blank_line(
    place: Place, model: FakeModelServer, how: str
) -> None:
    prompt = f"summarise this ({how})"
    piped = "line one of the log\nline two: ünïcode\n"
    done = run(place, "-p", prompt, how, stdin=piped.encode())
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from the fake model.\n"
    assert done.stderr == ""
    assert prompts_starting(model, prompt) == [f"{prompt}\n\n{piped}"]


@pytest.mark.parametrize("given", ["devnull", "empty", "blank"])
def test_nothing_piped_leaves_the_prompt_alone(
    place: Place, model: FakeModelServer, how: str, given: str
) -> None:
    prompt = f"nothing piped ({how}, {given})"
    if given == "devnull":
        with open("/dev/null", "rb") as devnull:
            done = run(place, "-p", prompt, how, stdin=devnull)
    else:
        done = run(place, "-p", prompt, how, stdin=b"" if given == "empty" else b" \n\n")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert prompts_starting(model, prompt) == [prompt]


def test_a_pipe_on_which_nothing_comes_does_not_hang_the_run(
    place: Place, model: FakeModelServer, how: str
) -> None:
    """An inherited pipe that is never written nor closed (a script's, a CI runner's): the
    run goes ahead with the prompt alone after the wait, and says so."""
    prompt = f"an open pipe ({how})"
    read_end, write_end = os.pipe()
    try:
        done = run(place, "-p", prompt, how, stdin=read_end)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert done.returncode == 0, done.stderr
    assert "rawtrio: nothing arrived on standard input in 3 s; running with the prompt alone" in (
        done.stderr
    )
    assert prompts_starting(model, prompt) == [prompt]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            b"ok so far \xff\xfe binary",
            "-p: the input piped on standard input is not valid UTF-8 (byte 0xff at offset "
            "10); rawtrio takes text in UTF-8",
        ),
        (
            b"text\0with a NUL",
            "-p: the input piped on standard input holds a NUL byte (at offset 4): binary "
            "data, not text",
        ),
        (b"x" * (MAX_STDIN_BYTES + 1), "-p: standard input is larger than 4 MiB"),
    ],
    ids=["not-utf8", "nul", "too-large"],
)
def test_piped_input_that_is_not_text_or_too_large_is_a_usage_error(
    place: Place, model: FakeModelServer, how: str, data: bytes, message: str
) -> None:
    prompt = f"bad input ({how}, {len(data)})"
    done = run(place, "-p", prompt, how, stdin=data)
    assert done.returncode == 2, done
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    assert prompts_starting(model, prompt) == []


def test_the_prompt_on_stdin_has_the_same_limit(place: Place, how: str) -> None:
    done = run(place, "-p", "-", how, stdin=b"x" * (MAX_STDIN_BYTES + 1))
    assert done.returncode == 2, done
    assert "-p: standard input is larger than 4 MiB" in done.stderr
    assert done.stdout == ""
