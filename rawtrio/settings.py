"""Provider and session settings from command-line flags and environment.

Until the configuration file lands, these are the only sources. Flags win over
environment variables; the SDKs read their own `*_BASE_URL` variables when no
`--base-url` is given.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from rawtrio.contracts import DEFAULT_MAX_STEPS, DEFAULT_SIGTERM_GRACE_S
from rawtrio.errors import NoCredentials, UsageError
from rawtrio.messages import ProviderKind
from rawtrio.providers import ENV_KEYS
from rawtrio.providers.base import ProviderSettings
from rawtrio.runtime.session import SessionOptions
from rawtrio.tools.base import ToolSettings

DEFAULT_MODELS: dict[str, str] = {
    "anthropic": "claude-sonnet-4-5",
    "openai-chat": "gpt-5",
    "openai-responses": "gpt-5",
}


def provider_settings(args: argparse.Namespace) -> ProviderSettings:
    kind = args.provider or os.environ.get("RAWTRIO_PROVIDER") or "anthropic"
    if kind not in ENV_KEYS:
        raise UsageError(f"RAWTRIO_PROVIDER: expected one of {', '.join(ENV_KEYS)}, got {kind!r}")
    provider: ProviderKind = kind
    env_var = ENV_KEYS[provider]
    key = os.environ.get(env_var, "")
    if not key:
        raise NoCredentials(kind, env_var)
    model = args.model or os.environ.get("RAWTRIO_MODEL") or DEFAULT_MODELS[kind]
    return ProviderSettings(kind=provider, model=model, api_key=key, base_url=args.base_url)


def session_options(args: argparse.Namespace) -> SessionOptions:
    cwd = Path(args.cwd or os.getcwd()).resolve()
    if not cwd.is_dir():
        raise UsageError(f"--cwd: {cwd} is not a directory")
    max_steps = args.max_steps if args.max_steps is not None else DEFAULT_MAX_STEPS
    if max_steps < 1:
        raise UsageError(f"--max-steps: expected a positive integer, got {max_steps}")
    grace = args.sigterm_grace if args.sigterm_grace is not None else DEFAULT_SIGTERM_GRACE_S
    if grace < 0:
        raise UsageError(f"--sigterm-grace: expected seconds >= 0, got {grace}")
    return SessionOptions(
        cwd=cwd,
        provider=provider_settings(args),
        max_steps=max_steps,
        tools=ToolSettings(sigterm_grace_s=grace),
    )
