"""Loads every skill of a checkout of github.com/anthropics/skills.

Some of those skills may not be redistributed, so only four are fixtures of the suite
(tests/fixtures/third_party/anthropics-skills); this check takes a fetched checkout:

    .venv/bin/python -m tests.skills.check_anthropic_skills PATH/TO/skills-checkout

It prints how many loaded and every discovery warning; it exits 1 when a skill folder did
not load as a skill.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rawtrio.skills import discover_skills


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not (Path(argv[0]) / "skills").is_dir():
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(argv[0]) / "skills"
    folders = sorted(p.name for p in root.iterdir() if (p / "SKILL.md").is_file())
    found = discover_skills([root])
    loaded = sorted(s.name for s in found.skills)
    for warning in found.warnings:
        print(f"warning: {warning}")
    missing = sorted(set(folders) - set(loaded))
    print(f"{len(loaded)} of {len(folders)} skills loaded")
    if missing:
        print("not loaded: " + ", ".join(missing), file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
