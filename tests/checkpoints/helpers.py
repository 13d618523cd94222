"""A project tree to change, and a byte-for-byte picture of it (content, modes, folders)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

Picture = dict[str, tuple[str, bytes, int]]


def picture(root: Path) -> Picture:
    """Every file, symlink and folder below `root` except `.git`: kind, bytes, mode."""
    out: Picture = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = os.lstat(p)
            rel = p.relative_to(root).as_posix()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.fsencode(os.readlink(p)), 0)
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", b"", 0)
            else:
                out[rel] = ("file", p.read_bytes(), stat.S_IMODE(st.st_mode))
    return out


def make_project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "edit.txt").write_bytes(b"alpha\nbeta\ngamma\n")
    (root / "sed.txt").write_bytes(b"x one\nx two\n")
    (root / "move.txt").write_bytes(b"moved content\n")
    (root / "gone.txt").write_bytes(b"\x00\x01binary\xff")
    (root / "script.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    os.chmod(root / "script.sh", 0o600)
    (root / "keep").mkdir()
    (root / "keep" / "nested.txt").write_bytes(b"nested\n")
    (root / ".gitignore").write_bytes(b"ignored/\n")
    (root / "ignored").mkdir()
    (root / "ignored" / "cache.bin").write_bytes(b"cache")
    return root


BASH = (
    "sed -i 's/x/y/' sed.txt && mv move.txt moved.txt && rm gone.txt && "
    "mkdir -p fresh/deep && printf 'new\\n' > fresh/deep/n.txt && chmod 755 script.sh"
)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def scenario_all_tools() -> dict[str, Any]:
    """One turn: write_file (a new file in a new folder), edit_file, then bash."""
    return {
        "rules": [
            {
                "match": "change things",
                "replies": [
                    {
                        "tool_calls": [
                            call("write_file", path="made/by/write.txt", content="written\n"),
                            call("edit_file", path="edit.txt", old_text="beta", new_text="BETA"),
                        ]
                    },
                    {"tool_calls": [call("bash", command=BASH)]},
                    {"text": "done"},
                ],
            },
            {"match": "*", "replies": [{"text": "ok"}]},
        ]
    }
