from __future__ import annotations

from pathlib import Path


def write_skill(root: Path, folder: str, name: str, description: str, body: str = "") -> Path:
    path = root / folder
    path.mkdir(parents=True, exist_ok=True)
    (path / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\n{body}", encoding="utf-8"
    )
    return path
