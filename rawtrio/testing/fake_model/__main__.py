"""Run the fake model server on its own: `python -m rawtrio.testing.fake_model`.

Prints one JSON line `{"base_url": ..., "openai_base_url": ...}` to stdout once listening,
then serves until SIGINT or SIGTERM, and exits 0.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys

import trio

from rawtrio.testing.fake_model.scenario import Scenario, ScenarioError
from rawtrio.testing.fake_model.server import open_fake_model_server


async def serve(scenario: Scenario, port: int) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with open_fake_model_server(scenario, port=port) as server:
            line = {"base_url": server.base_url, "openai_base_url": server.openai_base_url}
            print(json.dumps(line), flush=True)
            async for _ in signals:
                break


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rawtrio.testing.fake_model")
    parser.add_argument("--scenario", help="scenario JSON file (default: no rules)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    args = parser.parse_args(argv)
    try:
        scenario = Scenario.from_file(args.scenario) if args.scenario else Scenario()
    except (OSError, ScenarioError) as exc:
        print(f"fake-model: {exc}", file=sys.stderr)
        return 2
    trio.run(serve, scenario, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
