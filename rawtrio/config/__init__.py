"""Configuration: TOML files, agents, models, variables, trust (docs/configuration.md).

Foundation layer: validated, frozen values for the rest of rawtrio. `resolve_session_config`
is the one call a front end makes to get a session's `ResolvedAgent`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rawtrio.config.agents_md import AgentsFile, AgentsFiles, find_agents_files
    from rawtrio.config.edit import default_project_file, save_allow_rule
    from rawtrio.config.errors import ConfigFileError, ConfigProblem
    from rawtrio.config.json_schema import config_json_schema, render_json_schema
    from rawtrio.config.loader import (
        ConfigLayer,
        LoadedConfig,
        find_project_config,
        load_config,
        project_root,
        user_config_path,
    )
    from rawtrio.config.resolve import (
        CliOverrides,
        ResolvedAgent,
        ResolvedModel,
        resolve_agent,
        resolve_session_config,
        select_tools,
    )
    from rawtrio.config.safe_read import UnsafeFileError, read_bounded, read_head
    from rawtrio.config.schema import RawtrioConfig
    from rawtrio.config.starter import STARTER, write_starter
    from rawtrio.config.trust import ProjectTrust, TrustStore
    from rawtrio.config.variables import VariableError, VariableResolver
    from rawtrio.redaction import Redactor

#: Where each name lives, imported on first use (PEP 562): a front end that only needs
#: the user config file's path (`rawtrio.config.user_path`) does not load pydantic and the
#: schema first.
_WHERE: dict[str, str] = {
    "AgentsFile": "rawtrio.config.agents_md",
    "AgentsFiles": "rawtrio.config.agents_md",
    "find_agents_files": "rawtrio.config.agents_md",
    "default_project_file": "rawtrio.config.edit",
    "save_allow_rule": "rawtrio.config.edit",
    "ConfigFileError": "rawtrio.config.errors",
    "ConfigProblem": "rawtrio.config.errors",
    "config_json_schema": "rawtrio.config.json_schema",
    "render_json_schema": "rawtrio.config.json_schema",
    "ConfigLayer": "rawtrio.config.loader",
    "LoadedConfig": "rawtrio.config.loader",
    "find_project_config": "rawtrio.config.loader",
    "load_config": "rawtrio.config.loader",
    "project_root": "rawtrio.config.loader",
    "user_config_path": "rawtrio.config.user_path",
    "CliOverrides": "rawtrio.config.resolve",
    "ResolvedAgent": "rawtrio.config.resolve",
    "ResolvedModel": "rawtrio.config.resolve",
    "resolve_agent": "rawtrio.config.resolve",
    "resolve_session_config": "rawtrio.config.resolve",
    "select_tools": "rawtrio.config.resolve",
    "UnsafeFileError": "rawtrio.config.safe_read",
    "read_bounded": "rawtrio.config.safe_read",
    "read_head": "rawtrio.config.safe_read",
    "RawtrioConfig": "rawtrio.config.schema",
    "STARTER": "rawtrio.config.starter",
    "write_starter": "rawtrio.config.starter",
    "ProjectTrust": "rawtrio.config.trust",
    "TrustStore": "rawtrio.config.trust",
    "VariableError": "rawtrio.config.variables",
    "VariableResolver": "rawtrio.config.variables",
    "Redactor": "rawtrio.redaction",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "STARTER",
    "AgentsFile",
    "AgentsFiles",
    "CliOverrides",
    "ConfigFileError",
    "ConfigLayer",
    "ConfigProblem",
    "LoadedConfig",
    "ProjectTrust",
    "RawtrioConfig",
    "Redactor",
    "ResolvedAgent",
    "ResolvedModel",
    "TrustStore",
    "UnsafeFileError",
    "VariableError",
    "VariableResolver",
    "config_json_schema",
    "default_project_file",
    "find_agents_files",
    "find_project_config",
    "load_config",
    "project_root",
    "read_bounded",
    "read_head",
    "render_json_schema",
    "resolve_agent",
    "resolve_session_config",
    "save_allow_rule",
    "select_tools",
    "user_config_path",
    "write_starter",
]
