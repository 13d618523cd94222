"""The flags that choose a session's model, agent and limits, shared by every front end that
opens sessions (`rawtrio`, `rawtrio -p`, `rawtrio acp`). Resolved by the composition root
(`rawtrio.app`) with the configuration and environment (docs/configuration.md)."""

from __future__ import annotations

import argparse

PROVIDERS = ("anthropic", "openai-chat", "openai-responses")


def add_session_flags(p: argparse.ArgumentParser) -> None:
    """The flags that choose a session's model, agent and limits (every front end)."""
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
    p.add_argument(
        "--sigterm-grace",
        type=float,
        metavar="SECONDS",
        help="grace between SIGTERM and SIGKILL for tool processes (default 2)",
    )
    p.add_argument("--config", metavar="PATH", help="user config file (env RAWTRIO_CONFIG)")
    p.add_argument("--agent", help="agent from the config to use (env RAWTRIO_AGENT)")
    p.add_argument(
        "--mode",
        dest="permission_mode",
        choices=("default", "accept-edits", "plan", "bypass"),
        help="permission mode (env RAWTRIO_PERMISSION_MODE; default from the agent)",
    )
