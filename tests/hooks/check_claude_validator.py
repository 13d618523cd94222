"""Runs Claude Code's own hook example, unchanged, through `rawtrio -p`.

examples/hooks/bash_command_validator_example.py of github.com/anthropics/claude-code may not
be redistributed (tests/fixtures/third_party/claude-code/README.md), so it is not part of the
suite: fetch a copy and run

    .venv/bin/python -m tests.hooks.check_claude_validator PATH/TO/the_example.py

It exits 0 when a `grep` command is blocked with the script's reason and a piped `grep`
still runs; otherwise it says what differed and exits 1.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
from pathlib import Path

from tests.headless.support import Isolation
from tests.hooks.test_claude_code_sessions import RG, project, run


def check(script: Path) -> list[str]:
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        iso = Isolation(Path(tmp))
        project(iso, f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}")
        _, sent_back = run(iso, "grep -r needle .", "--trust")
        if f"• {RG} for better performance and features" not in sent_back:
            problems.append(f"grep was not blocked with the script's reason: {sent_back[:400]}")
        if "notes.txt" in sent_back:
            problems.append("the blocked grep ran anyway")
        _, passed = run(iso, "grep -r needle . | head -1", "--trust")
        if "notes.txt:needle in here" not in passed:
            problems.append(f"the piped grep did not run: {passed[:400]}")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_file():
        print(__doc__, file=sys.stderr)
        return 2
    problems = check(Path(argv[0]))
    for problem in problems:
        print(problem, file=sys.stderr)
    verdict = "FAILED" if problems else "blocked grep through rawtrio"
    print(f"Claude Code's validator: {verdict}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
