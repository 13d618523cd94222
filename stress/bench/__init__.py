"""Benchmarks of the budgets in docs/benchmarks.md: they report figures against the
budgets and never fail on timing. Run them with `python -m stress.bench` (see `__main__`
for how to add one)."""
