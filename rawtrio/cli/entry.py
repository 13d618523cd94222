"""The console script's first module: answers `--version` before importing anything else.

`rawtrio --version` must take no more than the interpreter's own start-up plus a few
milliseconds (docs/benchmarks.md); even argparse and logging cost more than that. Every other
command line goes to `rawtrio.cli.main`, which parses it properly.
"""

from __future__ import annotations

import os
import sys

from rawtrio import __version__


def main() -> None:
    if sys.argv[1:] in (["--version"], ["-V"]):
        sys.stdout.write(f"rawtrio {__version__}\n")
        sys.stdout.flush()
        os._exit(0)
    from rawtrio.cli.main import main as cli_main

    cli_main()
