"""Give the C heap's free pages back to the operating system when a long-lived process goes
idle (the terminal chat once a turn has ended and nothing is queued).

Why: CPython keeps its small objects in pymalloc's arenas, but every block over 512 bytes —
a tool's output, a long reply, the text of a file read, the SSE buffers — comes from the C
allocator. glibc hands back on its own only what is free at the top of a heap; pages freed
in the middle of a heap (a big tool output freed under a small object allocated after it)
stay resident until `malloc_trim(0)` releases them (`madvise`, in every arena). Measured in
the chat (docs/benchmarks.md, "idle RSS"): after a turn whose tool printed 400,000 lines it
gives back 1.0-1.5 MB in under 0.5 ms; after a short text turn about 0.1 MB. What it gives
back is memory nothing uses: a later allocation gets fresh pages, nothing else changes.

Not done here: a full `gc.collect()` at the idle prompt frees nothing (the chat makes no
garbage cycles worth it) and costs 160-460 ms of CPU with the SDK's objects loaded.

Linux with glibc only: elsewhere (macOS, musl, Windows) there is no such call, and
`release_free_heap` does nothing and says so.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import cache

__all__ = ["release_free_heap"]


def release_free_heap() -> bool:
    """Return the C heap's free pages to the OS (glibc's `malloc_trim(0)`); cheap (well
    under a millisecond), so a front end calls it each time it goes idle. False where the
    C library has no such call: nothing was done."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, looked up once in the process's own symbols; None where the
    platform or C library has none."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None)  # the symbols already loaded: the C library Python runs on
    except OSError:
        return None
    trim = getattr(libc, "malloc_trim", None)  # musl has none
    if trim is None:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    found: Callable[[int], int] = trim
    return found
