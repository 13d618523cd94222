"""The project a folder belongs to, and the folders from it up to the project root. Light
(no pydantic, no schema): skill discovery and the memory files need only these, and a run
without config files must not load the config loader for them."""

from __future__ import annotations

from pathlib import Path


def repo_root(cwd: Path) -> Path | None:
    """The nearest folder at or above `cwd` holding `.git` (a folder or a worktree file)."""
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return None


def project_root(folder: Path) -> Path:
    """The project a folder belongs to: its repository root, else the folder itself.
    Files the project provides (AGENTS.md, its config, prompt files, skills) are read only
    from inside it."""
    folder = folder.resolve()
    return repo_root(folder) or folder


def folders_up_to_root(cwd: Path) -> list[Path]:
    """`cwd` and its parents up to the repository root; just `cwd` outside a repository."""
    cwd = cwd.resolve()
    root = repo_root(cwd)
    if root is None:
        return [cwd]
    out = [cwd]
    while out[-1] != root:
        out.append(out[-1].parent)
    return out
