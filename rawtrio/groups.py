"""The exception-group policy, in one place.

trio nurseries raise `ExceptionGroup`s. rawtrio's own context managers (`open_runtime`,
process readers) present plain exceptions to their callers instead:

- a group made only of `trio.Cancelled` re-raises one of them, so `except trio.Cancelled`
  and cancel scopes work as usual;
- a group with exactly one other exception re-raises that exception (its traceback is
  kept; the group is dropped as context);
- anything else (two real failures at once) propagates as the group, unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import trio


@contextlib.contextmanager
def collapse_group() -> Iterator[None]:
    try:
        yield
    except BaseExceptionGroup as group:
        cancelled, rest = group.split(trio.Cancelled)
        if rest is None and cancelled is not None:
            raise leaves(cancelled)[0] from None
        if rest is not None:
            found = leaves(rest)
            if len(found) == 1:
                raise found[0] from None
        raise


def leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """The non-group exceptions inside a group, depth first."""
    found: list[BaseException] = []
    for exc in group.exceptions:
        found.extend(leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return found
