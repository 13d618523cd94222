"""The cancellation stress suite: cancel a turn at every scheduling point, check I1–I5.

`python -m stress --budget SECONDS` (or `make stress BUDGET=SECONDS`); see `docs/stress.md`.
Benchmarks live in `stress.bench` and are separate.
"""
