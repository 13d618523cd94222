"""The application: the one composition root every front end opens (docs/contracts.md)."""
