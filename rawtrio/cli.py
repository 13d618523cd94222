"""Command-line entry point. Imports nothing heavy before the arguments are parsed."""

from __future__ import annotations

import argparse
import sys

from rawtrio import __version__

PROVIDERS = ("anthropic", "openai-chat", "openai-responses")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rawtrio",
        description="A local coding agent with strict cancellation.",
    )
    p.add_argument("--version", action="version", version=f"rawtrio {__version__}")
    p.add_argument(
        "-p",
        "--print",
        dest="prompt",
        metavar="PROMPT",
        help="run one turn headless with PROMPT and print the answer ('-' reads stdin)",
    )
    p.add_argument(
        "--output-format",
        choices=("text", "json", "stream-json"),
        default="text",
        help="headless output: the answer text, one JSON result, or JSON lines",
    )
    p.add_argument(
        "--provider",
        choices=PROVIDERS,
        help="wire format of the model endpoint (env RAWTRIO_PROVIDER; default anthropic)",
    )
    p.add_argument("--model", help="model id (env RAWTRIO_MODEL)")
    p.add_argument(
        "--base-url",
        help="endpoint base URL (env ANTHROPIC_BASE_URL / OPENAI_BASE_URL are read by the SDKs)",
    )
    p.add_argument(
        "--max-steps", type=int, metavar="N", help="model requests per turn (default 50)"
    )
    p.add_argument("--cwd", help="working directory of the session (default: current)")
    p.add_argument(
        "--sigterm-grace",
        type=float,
        metavar="SECONDS",
        help="grace between SIGTERM and SIGKILL for tool processes (default 2)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.prompt is not None:
        from rawtrio.headless import main as headless_main

        return headless_main(args)
    from rawtrio.repl import main as repl_main

    return repl_main(args)


if __name__ == "__main__":
    sys.exit(main())
