"""Which project folders the user trusts to run code from their `.rawtrio/config.toml`.

A cloned repository's config file can define hooks, command variables and MCP servers
(which run programs), allow rules and an `accept-edits` or `bypass` permission mode (which
let tools run without asking), `confine_paths = false` (which lets the file tools out of
the working directory), model base URLs
(which receive API keys) and prompt files or file variables (which name files whose text
reaches the model). Such a file takes effect only once the user trusted its folder;
trust is remembered per folder *and* file hash, so a changed file must be trusted again.

The store is a small JSON file, `trust.json`, in rawtrio's state folder (`RAWTRIO_STATE_DIR`
when set, else `platformdirs.user_state_path("rawtrio")`), written atomically.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from rawtrio.config.errors import ConfigFileError, problem
from rawtrio.config.safe_read import MAX_CONFIG_BYTES, read_bounded
from rawtrio.private_files import write_private

STATE_DIR_ENV: Final = "RAWTRIO_STATE_DIR"
_VERSION: Final = 1


def state_dir(env: Mapping[str, str]) -> Path:
    explicit = env.get(STATE_DIR_ENV)
    if explicit:
        return Path(explicit)
    from rawtrio.user_dirs import user_dir  # platformdirs' folder, mostly without it

    return user_dir("state")


def file_digest(path: Path) -> str:
    return hashlib.sha256(
        read_bounded(path, limit=MAX_CONFIG_BYTES, what="config file")
    ).hexdigest()


@dataclass(frozen=True, slots=True)
class ProjectTrust:
    """A project config file that needs trust, and why."""

    folder: Path
    file: Path
    digest: str
    #: What in the file needs trust ("hooks", "mcp_servers", "allow rules", …).
    reasons: tuple[str, ...]

    def notice(self) -> str:
        what = ", ".join(self.reasons)
        return (
            f"{self.file} defines {what}, which run code or grant permissions; it is ignored "
            f"until you trust {self.folder} (answer the trust prompt, or pass --trust)"
        )


class TrustStore:
    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def default(cls, env: Mapping[str, str]) -> TrustStore:
        return cls(state_dir(env) / "trust.json")

    def is_trusted(self, folder: Path, digest: str) -> bool:
        entry = self._read().get(str(folder.resolve()))
        return isinstance(entry, dict) and entry.get("sha256") == digest

    def trust(self, folder: Path, digest: str) -> None:
        folders = self._read()
        folders[str(folder.resolve())] = {"sha256": digest, "trusted_at": int(time.time())}
        self._write(folders)

    def revoke(self, folder: Path) -> None:
        folders = self._read()
        if folders.pop(str(folder.resolve()), None) is not None:
            self._write(folders)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            raise ConfigFileError(
                [problem(self.path, "", f"unreadable trust store ({e}); delete it to reset")]
            ) from None
        folders = data.get("folders") if isinstance(data, dict) else None
        if not isinstance(folders, dict):
            raise ConfigFileError(
                [problem(self.path, "folders", "expected a table; delete the file to reset")]
            )
        return folders

    def _write(self, folders: dict[str, Any]) -> None:
        text = json.dumps({"version": _VERSION, "folders": folders}, indent=2, sort_keys=True)
        write_private(self.path, text + "\n")
