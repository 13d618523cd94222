"""The session store at scale (docs/benchmarks.md, budgets: a page ≤ 5 ms, opening ≤ 150 ms).

Method: a real `SqliteStore` file in a temporary directory (WAL; commit points with
`synchronous=FULL`, as in use).

- **The long session**: 1,000 finished turns of 100 display events each (100,000 items):
  the user message, a step with 60 text deltas, the assistant message with one `bash`
  call, its start, 20 output deltas and its result, a second step with 10 deltas and the
  final reply, usage and `turn_ended`. Per turn the model context gets the user message,
  the assistant message with the call, a ~1.5 kB result and the final reply (4,000
  context messages). The store creates the file and the session; the turns are written
  in bulk on a worker thread with the store's own row functions (`ops.insert_events`,
  `ops.append_messages`) plus the `turns` / `started_calls` rows of a finished turn,
  20 turns per transaction (through the public API, six transactions per turn, the
  build takes ~25 s instead of ~8 s; the reads measured do not care how rows were
  written).
- **Opening it**: what `Runtime.open_session` asks of the store — `open_for_write` (the
  lease and the crash-recovery check), `get_session`, `get_state` (the pending note),
  `load_context` and `last_seq` — then `close_session`, on an open store (a process opens
  the store once). The "cold" figure also opens the store (a new `SqliteStore`: thread,
  connect, schema check, WAL) inside the measurement.
- **Pages**: `history(limit=50)` at the start, the middle and the end of the history,
  newest-first and oldest-first; the middle and end cursors are the store's own, found by
  walking the history in pages of 5,000, as a client scrolling far would.
- **Commit latency of a tool result**, in the long session: an assistant message with a
  call is committed and the call marked started (untimed), then the `tool_call_finished`
  event is recorded and the `ToolResult` committed — timed from the event to the return
  of `commit`, the event's batch write included, as the runtime sees it; and the commit
  alone, without an event queued before it.
- **Search**: a second file with 1,000 sessions of 3 turns (~57,000 events, 12,000 of them
  indexed): `search()` (20 hits at most) for the most common word, a rare one, a prefix,
  two words, and a word that is nowhere. Words are drawn Zipf-like from a pseudo-word
  vocabulary, seeded.

`runs` is the number of repetitions of each timed operation (commit latency uses 5×).
Nothing fails on timing.
"""

from __future__ import annotations

import itertools
import random
import sqlite3
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any, Final

import trio

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus, TurnOutcome
from rawtrio.messages import AssistantMessage, Message, TextPart, ToolCall, ToolResult, UserMessage
from rawtrio.runtime.session import PENDING_NOTE_KEY
from rawtrio.store import ops
from rawtrio.store.sqlite import SqliteStore
from stress.bench.common import Figure, Options, median, percentile

DEFAULT_RUNS: Final = 30
SMOKE_RUNS: Final = 2
TURNS: Final = 1_000
#: Text deltas of a turn's first step; with them a turn has 100 display events.
DELTAS: Final = 60
PAGE: Final = 50
SEARCH_SESSIONS: Final = 1_000
SEARCH_TURNS: Final = 3
SEARCH_DELTAS: Final = 6

OPEN_TARGET_MS: Final = 150.0
PAGE_TARGET_MS: Final = 5.0

_SYLLABLES: Final = [
    "ka",
    "to",
    "mi",
    "re",
    "su",
    "na",
    "lo",
    "pe",
    "di",
    "vu",
    "ba",
    "ge",
    "ri",
    "so",
    "te",
    "ma",
    "ni",
    "ko",
    "lu",
    "ra",
    "zi",
    "fe",
    "do",
    "wa",
    "ye",
    "chi",
    "sha",
    "tra",
    "pli",
    "gro",
    "sta",
]


def vocabulary(rng: random.Random, size: int = 4_000) -> list[str]:
    """Pseudo-words (a Zipf-like draw from it gives common and rare words, like prose)."""
    words = {"".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(size)}
    return sorted(words)


class Prose:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.words = vocabulary(self.rng)
        # Zipf-like: word i is drawn with weight 1 / (i + 1).
        self.cumulative = list(itertools.accumulate(1.0 / (i + 1) for i in range(len(self.words))))

    def text(self, n: int) -> str:
        return " ".join(self.rng.choices(self.words, cum_weights=self.cumulative, k=n))


def turn_events(
    session_id: str, turn_id: str, seq: int, prose: Prose, deltas: int = 60
) -> list[ev.Event]:
    """One turn's display events, numbered from `seq`: `deltas + deltas // 3 + deltas // 6
    + 10` of them (100 for the default 60 text deltas of the first step)."""
    call_id = f"call_{turn_id}"
    common: dict[str, Any] = {"session_id": session_id, "turn_id": turn_id}
    out: list[ev.Event] = [
        ev.UserMessageCommitted(**common, text=prose.text(15)),
        ev.StepStarted(**common, step=1, model="bench-model"),
    ]
    out += [ev.TextDelta(**common, step=1, text=prose.text(1) + " ") for _ in range(deltas)]
    out += [
        ev.ToolCallAnnounced(**common, step=1, call_id=call_id, name="bash"),
        ev.AssistantMessageCommitted(**common, step=1, text=prose.text(60)),
        ev.ToolCallStarted(**common, call_id=call_id, name="bash", tool_id="bash"),
    ]
    out += [
        ev.ToolOutputDelta(**common, call_id=call_id, text="line\n") for _ in range(deltas // 3)
    ]
    out += [
        ev.ToolCallFinished(
            **common,
            call_id=call_id,
            name="bash",
            status=ToolStatus.OK,
            content=prose.text(30),
            started=True,
        ),
        ev.StepStarted(**common, step=2, model="bench-model"),
    ]
    out += [ev.TextDelta(**common, step=2, text=prose.text(1) + " ") for _ in range(deltas // 6)]
    out += [
        ev.AssistantMessageCommitted(**common, step=2, text=prose.text(10)),
        ev.Usage(
            **common,
            step=2,
            input_tokens=1000,
            output_tokens=100,
            cache_read_tokens=0,
            cache_write_tokens=0,
        ),
        ev.TurnEnded(**common, outcome=TurnOutcome.COMPLETED, reason="", steps=2),
    ]
    return [ev.with_seq(e, seq + i) for i, e in enumerate(out)]


def turn_messages(turn_id: str, prose: Prose) -> list[Message]:
    call_id = f"call_{turn_id}"
    call = ToolCall.parse(call_id, "bash", '{"command": "ls -la src"}')
    return [
        UserMessage(prose.text(15)),
        AssistantMessage((TextPart(prose.text(60)), call), "anthropic", "bench-model"),
        ToolResult(call_id, "bash", ToolStatus.OK, prose.text(250), started=True),
        AssistantMessage((TextPart(prose.text(10)),), "anthropic", "bench-model"),
    ]


async def build(path: Path, sessions: list[str], turns: int, deltas: int, prose: Prose) -> int:
    """Sessions as the runtime leaves them, written in bulk; returns the events per session.

    The store creates the file (schema, WAL) and the sessions; the turns are written on a
    worker thread with the store's own row functions (`ops.append_messages`,
    `ops.insert_events`), 20 turns per transaction instead of the runtime's six, plus
    the `turns` and `started_calls` rows a finished turn leaves.
    """
    async with SqliteStore(path) as store:
        for session_id in sessions:
            await store.create_session(
                session_id=session_id,
                cwd=f"/home/user/project{len(session_id) % 7}",
                system_prompt="You are a coding agent.",
                provider="anthropic",
                model="bench-model",
                title="",
            )
            await store.close_session(session_id)

    def write() -> int:
        conn = sqlite3.connect(path, isolation_level=None)
        seq = 0
        try:
            for session_id in sessions:
                seq = 0
                for first in range(0, turns, 20):
                    with ops.write_txn(conn, durable=False):
                        for t in range(first, min(first + 20, turns)):
                            seq = _write_turn(conn, session_id, f"t{t}", seq, deltas, prose)
        finally:
            conn.close()
        return seq

    return await trio.to_thread.run_sync(write)


def _write_turn(
    conn: sqlite3.Connection, session_id: str, turn_id: str, seq: int, deltas: int, prose: Prose
) -> int:
    now = time.time()
    events = turn_events(session_id, turn_id, seq + 1, prose, deltas)
    half = len(events) // 2
    conn.execute(
        "INSERT INTO turns (session_id, id, client_request_id, outcome, reason, started_at, "
        "ended_at) VALUES (?, ?, NULL, ?, '', ?, ?)",
        (session_id, turn_id, TurnOutcome.COMPLETED.value, now, now),
    )
    conn.execute(
        "INSERT INTO started_calls (session_id, call_id, turn_id, started_at) VALUES (?,?,?,?)",
        (session_id, f"call_{turn_id}", turn_id, now),
    )
    ops.insert_events(conn, events[:half])
    ops.append_messages(conn, session_id, turn_id, turn_messages(turn_id, prose))
    ops.insert_events(conn, events[half:])
    return seq + len(events)


async def timed(fn: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    await fn()
    return (time.perf_counter() - start) * 1000


async def open_like_runtime(store: SqliteStore, session_id: str) -> None:
    await store.open_for_write(session_id)
    await store.get_session(session_id)
    await store.get_state(session_id, PENDING_NOTE_KEY)
    await store.load_context(session_id)
    await store.last_seq(session_id)


async def measure_open(path: Path, session_id: str, runs: int) -> list[Figure]:
    warm: list[float] = []
    async with SqliteStore(path) as store:
        await open_like_runtime(store, session_id)  # warm the page cache
        await store.close_session(session_id)
        for _ in range(runs):
            warm.append(await timed(lambda: open_like_runtime(store, session_id)))
            await store.close_session(session_id)
    cold: list[float] = []
    for _ in range(max(3, runs // 3)):
        start = time.perf_counter()
        async with SqliteStore(path) as store:
            await open_like_runtime(store, session_id)
            cold.append((time.perf_counter() - start) * 1000)
            await store.close_session(session_id)
    note = f"{runs} runs; 4,000 context messages, 100,000 display items"
    return [
        Figure.against(
            "open a 100k-item session, median", median(warm), "ms", OPEN_TARGET_MS, note
        ),
        Figure.against("open a 100k-item session, p99", percentile(warm, 99), "ms", OPEN_TARGET_MS),
        Figure.against(
            "open the store + the session (cold process), median", median(cold), "ms", None
        ),
    ]


async def cursor_at(store: SqliteStore, session_id: str, skip: int, newest_first: bool) -> str:
    """The store's own cursor after `skip` items, found by walking big pages."""
    cursor: str | None = None
    while skip > 0:
        step = min(skip, 5_000)
        page = await store.history(session_id, cursor=cursor, limit=step, newest_first=newest_first)
        if page.next_cursor is None:
            raise RuntimeError(f"the history ended before item {skip}")
        cursor = page.next_cursor
        skip -= step
    if cursor is None:
        raise RuntimeError("no cursor for skip 0")
    return cursor


async def measure_pages(path: Path, session_id: str, items: int, runs: int) -> list[Figure]:
    figures: list[Figure] = []
    async with SqliteStore(path) as store:
        for newest_first, label in ((True, "newest-first"), (False, "oldest-first")):
            positions: dict[str, str | None] = {
                "start": None,
                "middle": await cursor_at(store, session_id, items // 2, newest_first),
                "end": await cursor_at(store, session_id, items - PAGE, newest_first),
            }
            for where, cursor in positions.items():
                samples: list[float] = []
                sizes: set[int] = set()

                async def page(
                    cursor: str | None = cursor, nf: bool = newest_first, sizes: set[int] = sizes
                ) -> None:
                    got = await store.history(
                        session_id, cursor=cursor, limit=PAGE, newest_first=nf
                    )
                    sizes.add(len(got.events))

                await page()
                for _ in range(runs):
                    samples.append(await timed(page))
                if sizes != {PAGE}:
                    raise RuntimeError(f"pages of {sizes} items, not {PAGE}")
                figures.append(
                    Figure.against(
                        f"page of 50, {label}, {where}, median",
                        median(samples),
                        "ms",
                        PAGE_TARGET_MS,
                        f"p99 {percentile(samples, 99):.2f} ms over {runs} runs"
                        if where == "start" and newest_first
                        else "",
                    )
                )
                figures.append(
                    Figure.against(
                        f"page of 50, {label}, {where}, p99",
                        percentile(samples, 99),
                        "ms",
                        PAGE_TARGET_MS,
                    )
                )
    return figures


async def measure_commit(path: Path, session_id: str, runs: int, prose: Prose) -> list[Figure]:
    with_event: list[float] = []
    alone: list[float] = []
    async with SqliteStore(path) as store:
        await store.open_for_write(session_id)
        seq = await store.last_seq(session_id)
        for i in range(runs):
            turn_id = f"commit{i}"
            await store.begin_turn(session_id, turn_id, None)
            for record_event in (True, False):
                call_id = f"c{i}{record_event}"
                call = ToolCall.parse(call_id, "bash", '{"command": "make test"}')
                assistant = AssistantMessage((TextPart("Running."), call), "anthropic", "m")
                await store.commit(session_id, turn_id, [assistant])
                await store.mark_call_started(session_id, turn_id, call_id)
                result = ToolResult(call_id, "bash", ToolStatus.OK, prose.text(250), started=True)
                start = time.perf_counter()
                if record_event:
                    seq += 1
                    store.record_event(
                        ev.ToolCallFinished(
                            session_id=session_id,
                            seq=seq,
                            turn_id=turn_id,
                            call_id=call_id,
                            name="bash",
                            status=ToolStatus.OK,
                            content=result.content,
                            started=True,
                        )
                    )
                await store.commit(session_id, turn_id, [result])
                (with_event if record_event else alone).append((time.perf_counter() - start) * 1000)
            await store.end_turn(session_id, turn_id, TurnOutcome.COMPLETED, "")
        await store.close_session(session_id)
    note = f"{runs} commits; synchronous=FULL, WAL"
    return [
        Figure.against(
            "commit a tool result (+ its event), median", median(with_event), "ms", None, note
        ),
        Figure.against(
            "commit a tool result (+ its event), p99", percentile(with_event, 99), "ms", None
        ),
        Figure.against("commit a tool result alone, median", median(alone), "ms", None),
        Figure.against("commit a tool result alone, p99", percentile(alone, 99), "ms", None),
    ]


async def build_search_db(path: Path, prose: Prose, count: int) -> tuple[int, str, str]:
    """`count` sessions; returns the indexed event count, a common and a rare word."""
    sessions = [f"s{i:04d}" for i in range(count)]
    await build(path, sessions, SEARCH_TURNS, SEARCH_DELTAS, prose)
    conn = sqlite3.connect(path)
    try:
        indexed = conn.execute("SELECT count(*) FROM events WHERE text IS NOT NULL").fetchone()[0]
    finally:
        conn.close()
    return int(indexed), prose.words[0], prose.words[-1]


async def measure_search(path: Path, runs: int, prose: Prose, count: int) -> list[Figure]:
    indexed, common, rare = await build_search_db(path, prose, count)
    queries = {
        "common word": common,
        "rare word": rare,
        "prefix": common[:3] + "*",
        "no match": "zzqqxxnothere",
        "two words": f"{common} {prose.words[10]}",
    }
    figures: list[Figure] = []
    async with SqliteStore(path) as store:
        for label, query in queries.items():
            hits = await store.search(query)
            samples = [await timed(partial(store.search, query)) for _ in range(runs)]
            figures.append(
                Figure.against(
                    f"search {count:,} sessions: {label}, median",
                    median(samples),
                    "ms",
                    None,
                    f"{query!r}: {len(hits)} hits (limit 20), p99 "
                    f"{percentile(samples, 99):.1f} ms; {indexed:,} indexed events",
                )
            )
    return figures


async def run(options: Options) -> list[Figure]:
    runs = options.runs
    turns, sessions = options.size(TURNS, 20), options.size(SEARCH_SESSIONS, 20)
    prose = Prose(7)
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="rawtrio-bench-store-") as tmp:
        long_db = Path(tmp) / "long.db"
        started = time.perf_counter()
        items = await build(long_db, ["long"], turns, DELTAS, prose)
        built_s = time.perf_counter() - started
        size_mb = long_db.stat().st_size / 1e6
        figures.append(
            Figure.against(
                f"build: {turns:,} turns, bulk",
                built_s,
                "s",
                None,
                f"{items:,} display items, {size_mb:.0f} MB file",
            )
        )
        figures += await measure_open(long_db, "long", runs)
        figures += await measure_pages(long_db, "long", items, runs)
        figures += await measure_commit(long_db, "long", runs * 5, prose)
        figures += await measure_search(Path(tmp) / "search.db", runs, prose, sessions)
    return figures


if __name__ == "__main__":
    from stress.bench.__main__ import format_table

    print(format_table([("store", f) for f in trio.run(run, Options(runs=5))]))
