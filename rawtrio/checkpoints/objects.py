"""The private blob store: `objects/<sha256>`, content-addressed, written crash-safely.

A blob is written to a temporary file in the same folder, flushed to disk, then renamed
to its name: a SIGKILL at any point leaves either no object or the whole object (a stray
`tmp-*` file at worst, which `sweep_temporaries` removes). An object that exists is
therefore complete, and writing one that exists is a no-op. Files are 0600, folders 0700.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

from rawtrio.private_files import private_dir


def blob_id(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ObjectStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, blob: str) -> Path:
        return self.root / blob[:2] / blob[2:]

    def put(self, data: bytes) -> str:
        """Store `data`; return its id. Idempotent and crash-safe."""
        blob = blob_id(data)
        target = self.path(blob)
        if target.exists():
            with contextlib.suppress(OSError):
                os.utime(target)  # met again: garbage collection's grace starts anew
            return blob
        private_dir(target.parent)
        tmp = target.parent / f"tmp-{os.getpid()}-{blob[:12]}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        return blob

    def get(self, blob: str) -> bytes:
        """The blob's bytes; FileNotFoundError when it was dropped (size cap)."""
        data = self.path(blob).read_bytes()
        if blob_id(data) != blob:
            raise FileNotFoundError(f"checkpoint object {blob} is damaged")
        return data

    def has(self, blob: str) -> bool:
        return self.path(blob).is_file()

    def all(self) -> dict[str, int]:
        """Every stored blob and its size."""
        found: dict[str, int] = {}
        if not self.root.is_dir():
            return found
        for sub in self.root.iterdir():
            if not sub.is_dir():
                continue
            for f in sub.iterdir():
                if not f.name.startswith("tmp-"):
                    with contextlib.suppress(OSError):
                        found[sub.name + f.name] = f.stat().st_size
        return found

    def mtime(self, blob: str) -> float:
        try:
            return self.path(blob).stat().st_mtime
        except OSError:
            return 0.0

    def remove(self, blob: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path(blob).unlink()

    def sweep_temporaries(self) -> int:
        """Remove what a killed writer left (never a complete object)."""
        n = 0
        if not self.root.is_dir():
            return n
        for f in self.root.glob("*/tmp-*"):
            with contextlib.suppress(OSError):
                f.unlink()
                n += 1
        return n
