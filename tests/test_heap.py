"""`rawtrio.heap.release_free_heap`: freed C-heap pages go back to the OS on glibc, and
the call does nothing where there is no `malloc_trim`."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from collections.abc import Iterator

import pytest

from rawtrio import heap

#: In a fresh interpreter: 24 MB in 6,000 blocks of 4,000 bytes (over pymalloc's 512, so
#: from the C heap, under glibc's mmap threshold, so inside the heap), then a small block
#: after them that stays, then the 24 MB freed: a hole in the middle of the heap, which
#: glibc does not give back by itself. Resident MB after the free and after the call.
HOLE_IN_THE_HEAP = """\
import json, os
from rawtrio.heap import release_free_heap
def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
blocks = [bytearray(4000) for _ in range(6000)]
pin = bytearray(4000)
del blocks
freed = rss_mb()
done = release_free_heap()
print(json.dumps({"freed": freed, "released": rss_mb(), "done": done}))
"""


def glibc() -> bool:
    return sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


def test_freed_heap_pages_go_back_to_the_os_on_glibc() -> None:
    if not glibc():
        pytest.skip("malloc_trim is glibc's (this is the Linux/glibc behaviour)")
    done = subprocess.run(
        [sys.executable, "-c", HOLE_IN_THE_HEAP],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    found = json.loads(done.stdout)
    assert found["done"] is True
    # Nearly all of the 24 MB hole comes back (glibc keeps what it needs for its top chunk).
    assert found["freed"] - found["released"] > 16, found


@pytest.fixture
def fresh_lookup() -> Iterator[None]:
    """`malloc_trim` looked up again under the test's conditions, and again after it."""
    heap._malloc_trim.cache_clear()
    yield
    heap._malloc_trim.cache_clear()


@pytest.mark.usefixtures("fresh_lookup")
@pytest.mark.parametrize("name", ["darwin", "win32", "freebsd14"])
def test_it_does_nothing_and_says_so_off_linux(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setattr(sys, "platform", name)
    assert heap.release_free_heap() is False


@pytest.mark.usefixtures("fresh_lookup")
def test_it_does_nothing_and_says_so_with_a_c_library_without_malloc_trim(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """musl's libc has no `malloc_trim`: the lookup finds none and the call does nothing."""
    import ctypes

    class NoTrim:
        def __init__(self, name: str | None) -> None:
            self.name = name

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(ctypes, "CDLL", NoTrim)
    assert heap.release_free_heap() is False


@pytest.mark.usefixtures("fresh_lookup")
def test_it_runs_in_this_process_where_glibc_has_it() -> None:
    assert heap.release_free_heap() is glibc()
