"""The names of the configuration's closed choices: the provider kinds and the permission
modes.

Below both the schema (`rawtrio.config.schema`, whose fields take them) and the built-in
values (`rawtrio.config.defaults`, whose annotations name the schema's models), so that
resolving flags against them needs no schema and neither module imports the other to get
them. Light: no pydantic.
"""

from __future__ import annotations

from typing import Literal

ProviderName = Literal["anthropic", "openai-chat", "openai-responses"]
PermissionModeName = Literal["default", "accept-edits", "plan", "bypass"]
