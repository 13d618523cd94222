"""`rawtrio config check|init`: validate the configuration, or write a starter file."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rawtrio.contracts import ExitCode
from rawtrio.errors import ConfigError

if TYPE_CHECKING:
    from rawtrio.config import ResolvedAgent
    from rawtrio.mcp.project import ProjectMcp


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rawtrio config", description="Configuration files.")
    sub = p.add_subparsers(dest="action", required=True)
    check = sub.add_parser("check", help="validate the files and print the resolved agent")
    check.add_argument("--config", metavar="PATH", help="user config file (env RAWTRIO_CONFIG)")
    check.add_argument("--agent", help="agent to resolve (env RAWTRIO_AGENT)")
    check.add_argument("--trust", action="store_true", help="trust this project's config file")
    init = sub.add_parser("init", help="write a commented starter file")
    init.add_argument("--config", metavar="PATH", help="where to write it (default: user file)")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from rawtrio.config import CliOverrides, resolve_session_config, user_config_path, write_starter

    try:
        if args.action == "init":
            path, _ = user_config_path(args.config, os.environ)
            print(f"wrote {write_starter(path, force=args.force)}")
            return ExitCode.COMPLETED
        overrides = CliOverrides(config=args.config, agent=args.agent, trust=args.trust)
        resolved = resolve_session_config(overrides, Path.cwd(), os.environ)
        from rawtrio.app.options import HOOKABLE_TOOL_IDS
        from rawtrio.mcp.project import with_project_servers

        project = _project_mcp(resolved, args.trust)
        resolved = with_project_servers(resolved, project)
        resolved.check_hook_matchers(HOOKABLE_TOOL_IDS)
    except (ConfigError, FileExistsError) as exc:
        print(f"rawtrio: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    skills, skill_notes = _skills(resolved)
    for notice in (*resolved.notices, *project.notices, *skill_notes):
        print(f"note: {notice}", file=sys.stderr)
    print(resolved.describe(os.environ))
    print(project.describe())
    print("skills:" + ("" if skills else " none"))
    print("\n".join(f"  {line}" for line in skills), end="\n" if skills else "")
    return ExitCode.COMPLETED


def _skills(resolved: ResolvedAgent) -> tuple[list[str], tuple[str, ...]]:
    """The agent's skills as a session here would find them ("name  folder"), and the
    discovery's warnings (skipped, shadowed, cut descriptions, missing skill_dirs)."""
    from rawtrio.config import project_root, select_tools
    from rawtrio.config.agents_md import home_folder
    from rawtrio.skills import discover_skills, skill_roots

    cwd = Path.cwd()
    roots, missing = skill_roots(cwd, resolved.skill_dirs, home=home_folder(os.environ))
    found = discover_skills(roots, project=project_root(cwd))
    lines = [f"{s.name}  {s.path}" for s in found.skills if select_tools(resolved.skills, [s.name])]
    return lines, (*missing, *found.warnings)


def _project_mcp(resolved: ResolvedAgent, trust: bool) -> ProjectMcp:
    """The project's `.mcp.json`, as a session here would use it."""
    from rawtrio.config import TrustStore
    from rawtrio.mcp.project import project_mcp

    store = TrustStore.default(os.environ)
    config = resolved.loaded.config
    return project_mcp(Path.cwd(), config.mcp_servers, store=store, trust=trust)
