"""The application: the one composition root every front end opens (docs/contracts.md,
"The application: open_app").

- `application` — `open_app` and `App`: overrides + configuration + environment → store
  and runtime; the interface every front end depends on.
- `options` — a session's options from the configuration files, flags and environment.
- `choice` — which session a run works in (`--continue`, `--resume`, `--fork`).
- `demo` — the offline demo's scenario, scratch project and options (`rawtrio --demo`).

Importing this package loads the runtime, the store and the configuration: front ends
import it after their arguments are parsed (`rawtrio --version` never does).
"""

from __future__ import annotations

from rawtrio.app.application import App, open_app
from rawtrio.app.choice import MIN_PREFIX, Choice
from rawtrio.app.options import SessionSetup

__all__ = ["MIN_PREFIX", "App", "Choice", "SessionSetup", "open_app"]
