"""Configuration: TOML files, agents, models, variables, trust (docs/configuration.md).

Foundation layer: validated, frozen values for the rest of rawtrio. `resolve_session_config`
is the one call a front end makes to get a session's `ResolvedAgent`.
"""

from __future__ import annotations

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
