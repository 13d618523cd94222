"""Context management: token accounting, usage and cost, compaction of the model context.

- `estimate` — a conservative token estimate without a tokenizer (no download at run time);
- `models` — context windows and output limits of well-known models (config overrides);
- `accounting` — the size of the next request (reported usage + estimate of what was
  added since), `max_tokens` clamping, and the running usage and cost totals;
- `compaction` — planning (what is kept, what is summarized, never splitting a call from
  its results), pruning old tool outputs, and the summary requests themselves.

The runtime glue (events, hooks, the store, cancellation) is `rawtrio.runtime.compaction`.
"""
