"""A session's memory of its compactions, and when the next automatic one is due.

`rawtrio.context.compaction` decides what a compaction keeps and how the summary is
written; this module decides *when* to compact, from the settings (`CompactionSettings`)
and from what earlier compactions did: at most one automatic compaction per turn, and none
while they do not help (no loops). The runtime side (`rawtrio.runtime.compaction`) runs a
compaction against a live session and updates this state.

Every request asks this module whether to compact first; `rawtrio.context.compaction` is
loaded by the first compaction, so a session that never compacts never loads it.
"""

from __future__ import annotations

from dataclasses import dataclass

from rawtrio import events as ev

#: After a compaction that did not help, the next automatic one waits until the context
#: grew by this share of the usable window (new material to summarize); after
#: `MAX_FUTILE` in a row that did not help, automatic compaction stops for the session
#: (until a compaction helps, e.g. a manual one): no loops.
RETRY_GROWTH = 0.1
MAX_FUTILE = 2


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    #: Compact automatically when the next request would pass `threshold` of the window.
    auto: bool = True
    #: Share of the usable window (the window less the reply's reserve) that triggers it.
    threshold: float = 0.8
    #: Complete turns kept verbatim at the end.
    keep_last_turns: int = 2
    #: Cut old tool outputs to head and tail (`prune_keep_chars` in all) before summarizing.
    prune_tool_outputs: bool = True
    prune_keep_chars: int = 2_000
    #: The output bound of each summary request.
    summary_max_tokens: int = 4_096


@dataclass
class CompactionState:
    #: The turn that already compacted automatically (one automatic compaction per turn).
    auto_turn: str | None = None
    #: The request size at which the last compaction did not help, and how many in a row.
    no_help_at: int | None = None
    futile: int = 0
    #: The last compaction's ending (a cancelled one included).
    last: ev.CompactionEnded | None = None

    def auto_due(
        self, settings: CompactionSettings, *, turn_id: str, size: int, usable: int | None
    ) -> bool:
        """Whether a request of `size` tokens in turn `turn_id` compacts automatically first."""
        return (
            usable is not None
            and settings.auto
            and size > settings.threshold * usable
            and self.auto_turn != turn_id
            and self.futile < MAX_FUTILE
            and (self.no_help_at is None or size >= self.no_help_at + RETRY_GROWTH * usable)
        )

    def auto_ended(
        self,
        settings: CompactionSettings,
        ended: ev.CompactionEnded,
        *,
        size: int,
        after: int,
        usable: int,
    ) -> None:
        """Note an automatic compaction of a `size`-token request that did not help enough
        (the request is `after` tokens now, in the measure `compacted` was given)."""
        if ended.outcome != "compacted" or after > settings.threshold * usable:
            self.no_help_at = size
            self.futile += 1

    def compacted(self, settings: CompactionSettings, *, after: int, usable: int | None) -> None:
        """A compaction brought the context to `after` tokens: under the threshold, it helped."""
        if usable is None or after <= settings.threshold * usable:
            self.futile, self.no_help_at = 0, None
