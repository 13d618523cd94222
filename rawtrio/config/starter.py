"""The commented starter file `rawtrio config init` writes."""

from __future__ import annotations

from pathlib import Path

from rawtrio.config.errors import ConfigFileError, problem
from rawtrio.private_files import write_private

STARTER = """\
# rawtrio configuration. Reference: docs/configuration.md; schema: docs/config.schema.json.
# Precedence: flags > RAWTRIO_* variables > .rawtrio/config.toml (project) > this file.
# Check it with `rawtrio config check`.

default_agent = "coder"

[models.sonnet]
provider = "anthropic"            # anthropic | openai-chat | openai-responses
model_id = "claude-sonnet-4-5"
api_key = { env = "ANTHROPIC_API_KEY" }
context_window = 200000
max_output_tokens = 8192
prices = { input = 3.0, output = 15.0, cache_read = 0.3, cache_write = 3.75 }

# [models.local]
# provider = "openai-chat"
# model_id = "qwen3-coder"
# base_url = "http://127.0.0.1:8080/v1"
# api_key = "local"

[agents.coder]
model = "sonnet"
description = "Reads, edits and runs things in the project"
# system_prompt = "Extra instructions for this agent."
# prompt_file = "prompts/coder.md"   # relative to this file's folder
tools = ["*"]                        # tool id globs; "!glob" removes
permission_mode = "default"          # default | accept-edits | plan | bypass
max_steps = 50
tool_output_cap = 30000
request_timeout_s = 600

# Rules: the last match wins. No match: read-only tools run, others ask.
[[agents.coder.permissions]]
match = "bash"
effect = "ask"

[[agents.coder.permissions]]
match = "bash"
effect = "allow"
when = { path = "command", regex = '^(ls|pwd|git (status|diff|log))\\b' }

[[agents.coder.permissions]]
match = "bash"
effect = "deny"
when = { path = "command", regex = '\\brm\\s+-rf\\s+/' }

# [variables.github_token]
# command = ["gh", "auth", "token", "--json"]   # stdout must be JSON
# timeout_s = 5
# ttl_s = 3600
# secret = true

# [mcp_servers.github]
# command = ["github-mcp-server", "stdio"]
# env = { GITHUB_TOKEN = { var = "github_token" } }
"""


def write_starter(path: Path, *, force: bool = False) -> Path:
    """Write the starter file; refuses to replace an existing file unless `force`."""
    if path.exists() and not force:
        raise ConfigFileError(
            [problem(path, "", "the file already exists; edit it, or pass --force to replace it")]
        )
    write_private(path, STARTER)
    return path
