"""The flags that choose a session's model, agent and limits, shared by every front end that
opens sessions (`rawtrio`, `rawtrio -p`, `rawtrio acp`), and the headless flags of `-p`.
Resolved by the composition root (`rawtrio.app`) with the configuration and environment
(docs/configuration.md).

Claude Code's flags are accepted with Claude Code's meaning (docs/compat.md, "Headless
(`-p`)"): `--max-turns` is `--max-steps`, `--permission-mode` takes Claude Code's mode
names besides rawtrio's, `--allowedTools` / `--disallowedTools` become permission rules
(`tool_rules`: the names and patterns as given, mapped for each session from its own
working directory by `session_tool_rules`, applied after the configuration's),
`--system-prompt` replaces the base prompt and `--append-system-prompt` adds to the end.
Stdlib only: the attached client parses these before anything heavy is imported.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from rawtrio.compat.claude_code import CLAUDE_ONLY_TOOLS, TOOL_IDS

PROVIDERS = ("anthropic", "openai-chat", "openai-responses")
MODES: Final = ("default", "accept-edits", "plan", "bypass")
#: rawtrio's permission modes by Claude Code's names (`--permission-mode`).
MODES_FROM_CLAUDE: Final = {
    "default": "default",
    "acceptEdits": "accept-edits",
    "plan": "plan",
    "bypassPermissions": "bypass",
}
#: `--output-format`: the answer text, Claude Code's result object, Claude Code's message
#: lines (`rawtrio.cli.claude_output`), rawtrio's own event lines (docs/contracts.md).
OUTPUT_FORMATS: Final = ("text", "json", "stream-json", "events")
#: `--input-format`: the prompt as text, or Claude Code's user messages, one JSON a line.
INPUT_FORMATS: Final = ("text", "stream-json")

_RAWTRIO_ID: Final = re.compile(r"\A[a-z0-9_*?/\[\].-]+\Z")


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, its width taken as `shutil.get_terminal_size` takes it but
    without importing `shutil` (with `zlib`, `bz2` and `lzma`): argparse builds one for
    every `add_argument`, so the default one loads them on every start, help or not."""

    def __init__(self, prog: str, *args: Any, **kwargs: Any) -> None:
        if len(args) < 3 and kwargs.get("width") is None:  # `width` is the third one
            kwargs["width"] = terminal_columns() - 2  # as argparse does with shutil's
        super().__init__(prog, *args, **kwargs)


def terminal_columns() -> int:
    """`shutil.get_terminal_size().columns`: `$COLUMNS`, else stdout's terminal, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns or 80


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
        "--max-steps",
        "--max-turns",
        type=int,
        metavar="N",
        help="model requests per turn (default 50; --max-turns is Claude Code's name)",
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
        "--permission-mode",
        dest="permission_mode",
        type=_mode,
        metavar="MODE",
        help="permission mode: default, accept-edits, plan, bypass, or Claude Code's names "
        "acceptEdits, bypassPermissions (env RAWTRIO_PERMISSION_MODE; default from the agent)",
    )
    p.add_argument(
        "--allowedTools",
        "--allowed-tools",
        dest="tool_rules",
        action=ToolRules,
        nargs="+",
        default=None,
        metavar="TOOL",
        help="tools that run without asking: Claude Code's names and patterns (Bash, "
        "'Bash(git log:*)', Read, 'Edit(./src/**)', mcp__server__tool) or rawtrio's tool "
        "ids, comma or space separated",
    )
    p.add_argument(
        "--disallowedTools",
        "--disallowed-tools",
        dest="tool_rules",
        action=ToolRules,
        nargs="+",
        default=None,
        metavar="TOOL",
        help="tools that are denied (removed from the model's list when unconditional); "
        "the same names and patterns as --allowedTools",
    )
    p.add_argument(
        "--system-prompt",
        metavar="TEXT",
        help="replace rawtrio's base system prompt (AGENTS.md, agent prompt and skills stay)",
    )
    p.add_argument(
        "--append-system-prompt",
        metavar="TEXT",
        help="add TEXT at the end of the system prompt",
    )


def add_headless_flags(p: argparse.ArgumentParser) -> None:
    """The flags of `rawtrio -p` besides the prompt (docs/user-guide.md, "Headless")."""
    p.add_argument(
        "--output-format",
        choices=OUTPUT_FORMATS,
        help="headless output: the answer text (default), Claude Code's result object "
        "(json), Claude Code's message lines (stream-json), or rawtrio's events as JSON "
        "lines (events)",
    )
    p.add_argument(
        "--input-format",
        choices=INPUT_FORMATS,
        help="headless input: the prompt (text, default), or Claude Code's user messages "
        "as JSON lines on stdin, one turn each (stream-json, with -p and no PROMPT or '-')",
    )
    p.add_argument(
        "--verbose",
        action="store_true",
        help="accepted for Claude Code's scripts (stream-json needs no --verbose here)",
    )


def _mode(text: str) -> str:
    if text in MODES:
        return text
    if text in MODES_FROM_CLAUDE:
        return MODES_FROM_CLAUDE[text]
    known = ", ".join([*MODES, *(m for m in MODES_FROM_CLAUDE if m not in MODES)])
    raise argparse.ArgumentTypeError(f"{text!r} is not a permission mode (one of {known})")


class ToolRules(argparse.Action):
    """`--allowedTools` / `--disallowedTools`: each name or pattern is checked now (a bad
    one is a usage error naming it; a Claude Code tool rawtrio has not is skipped with a
    warning) and kept as given, `{"pattern", "effect"}` in `tool_rules`, for each session
    to map from its own working directory (`session_tool_rules`)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        effect = "deny" if option_string and "disallowed" in option_string.lower() else "allow"
        entries: list[dict[str, Any]] = list(getattr(namespace, self.dest, None) or [])
        items = [values] if isinstance(values, str) else list(values or [])
        for item in items:
            for pattern in split_tool_list(str(item)):
                try:
                    mapped = tool_rules(pattern, effect)
                except ValueError as exc:
                    parser.error(f"{option_string}: {exc}")
                if mapped:
                    entries.append({"pattern": pattern, "effect": effect})
        setattr(namespace, self.dest, entries)


def ordered_rules(rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last matching rule wins: the denials go last, so no allow undoes one (as in
    Claude Code, where a deny always wins)."""
    return sorted(rules, key=lambda rule: rule["effect"] == "deny")


def session_tool_rules(entries: object, *, cwd: Path, home: Path) -> list[dict[str, Any]]:
    """The permission rules of `tool_rules` for a session that works in `cwd`: each
    `{"pattern", "effect"}` (a name or pattern as `--allowedTools` / `--disallowedTools`
    took it) mapped by `tool_rules`, its path patterns anchored at `cwd` (and `~/` at
    `home`); a rule object `{"match", "effect", "when"?}` as it is; the denials last.
    `ValueError` naming the entry that is neither or cannot be mapped."""
    if not isinstance(entries, list):
        raise ValueError(f"a list of rules, got {type(entries).__name__}")
    rules: list[dict[str, Any]] = []
    for i, entry in enumerate(entries):
        if (problem := rule_entry_problem(entry)) is not None:
            raise ValueError(f"entry {i + 1}: {problem}")
        if "pattern" in entry:
            try:
                effect = str(entry.get("effect"))
                rules.extend(tool_rules(entry["pattern"], effect, cwd=cwd, home=home))
            except ValueError as exc:
                raise ValueError(f"entry {i + 1}: {exc}") from None
        else:
            rules.append(entry)
    return ordered_rules(rules)


_PATTERN_KEYS: Final = ("pattern", "effect")
_RULE_KEYS: Final = ("match", "effect", "when")


def rule_entry_problem(entry: object) -> str | None:
    """What is wrong with the shape of one `tool_rules` entry, or None: `{"pattern",
    "effect"}` (a name or pattern as `--allowedTools` / `--disallowedTools` take it, effect
    allow or deny) or a rule object `{"match", "effect", "when"?}` (effect allow, ask or
    deny; `when` `{"path", "regex"}`, a regular expression that compiles). A host checks a
    client's entries with it before anything is resolved (JSON-RPC -32602 naming the
    entry); whether a pattern names a tool is known only when it is mapped."""
    from rawtrio.frozen import json_type_name

    if not isinstance(entry, dict):
        return f"must be an object, got {json_type_name(entry)}"
    if "pattern" in entry:
        unknown = sorted(set(entry) - set(_PATTERN_KEYS))
        if unknown:
            return f'unknown key {unknown[0]!r} ({{"pattern", "effect"}})'
        if not isinstance(entry["pattern"], str):
            return 'pattern must be a string ({"pattern", "effect"})'
        if entry.get("effect") not in ("allow", "deny"):
            return f"{entry.get('effect')!r}: a tool list allows or denies (effect allow or deny)"
        return None
    if "match" in entry:
        unknown = sorted(set(entry) - set(_RULE_KEYS))
        if unknown:
            return f'unknown key {unknown[0]!r} ({{"match", "effect", "when"}})'
        if not isinstance(entry["match"], str) or not entry["match"]:
            return "match must be a non-empty string (a glob over tool ids)"
        if entry.get("effect") not in ("allow", "ask", "deny"):
            return f"effect must be allow, ask or deny, got {entry.get('effect')!r}"
        when = entry.get("when")
        if when is None:
            return None
        if (
            not isinstance(when, dict)
            or set(when) != {"path", "regex"}
            or not all(isinstance(v, str) for v in when.values())
        ):
            return 'when must be {"path": string, "regex": string}'
        try:
            re.compile(when["regex"])
        except re.error as exc:
            return f"when.regex {when['regex']!r}: {exc}"
        return None
    return (
        'needs "pattern" (a name or pattern as --allowedTools takes it, with "effect" allow '
        'or deny) or "match" (a rule object {"match", "effect", "when"?})'
    )


def split_tool_list(text: str) -> list[str]:
    """`"Bash(git log:*),Read"` → the names and patterns, split at commas and spaces that
    are not inside parentheses."""
    parts: list[str] = []
    depth, current = 0, ""
    for ch in text:
        if ch in ",\n\t " and depth == 0:
            if current.strip():
                parts.append(current.strip())
            current = ""
            continue
        depth += ch == "("
        depth -= ch == ")" and depth > 0
        current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def tool_rules(
    pattern: str, effect: str, *, cwd: Path | None = None, home: Path | None = None
) -> list[dict[str, Any]]:
    """The permission rules of one Claude Code tool name or pattern, mapped as the same
    entry of `.claude/settings.json` is (`rawtrio.compat.claude_permissions`; path patterns
    from the working directory, `cwd`, as Claude Code takes command-line rules), or of a
    rawtrio tool id. Empty for a Claude Code tool rawtrio does not have (a warning on stderr
    says so); `ValueError` naming what cannot be mapped."""
    # Loaded by a tool list on the command line only, not by every start.
    from rawtrio.compat.claude_permissions import NotAnEntry, UnknownTool, Unmapped, map_entry

    if effect not in ("allow", "deny"):
        raise ValueError(f"{effect!r}: a tool list allows or denies")
    here = cwd if cwd is not None else Path(os.getcwd())
    try:
        mapped = map_entry(
            pattern,
            "deny" if effect == "deny" else "allow",
            base=here,
            cwd=here,
            home=home if home is not None else Path.home(),
        )
    except UnknownTool as exc:
        if exc.name in CLAUDE_ONLY_TOOLS:
            print(
                f"rawtrio: warning: {pattern}: rawtrio has no {exc.name} tool; skipped",
                file=sys.stderr,
            )
            return []
        if _RAWTRIO_ID.match(pattern):  # rawtrio's own tool id (`bash`, `read_*`)
            return [{"match": pattern, "effect": effect}]
        raise ValueError(
            f"{pattern!r}: no such tool (Claude Code's {', '.join(TOOL_IDS)}, "
            "mcp__server__tool, or a rawtrio tool id)"
        ) from None
    except NotAnEntry:
        if _RAWTRIO_ID.match(pattern):  # rawtrio's own tool id (`mcp/*`, `mcp/gh/x`)
            return [{"match": pattern, "effect": effect}]
        raise ValueError(f"{pattern!r} is not a tool name or pattern") from None
    except Unmapped as exc:
        raise ValueError(f"{pattern!r} {exc}") from None
    return [
        {"match": rule.match, "effect": effect}
        | ({"when": {"path": rule.path, "regex": rule.regex}} if rule.path else {})
        for rule in mapped
    ]


def settle_headless_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Check the headless flags against each other and settle the prompt: `-p PROMPT`, or
    Claude Code's `-p QUERY` / `-p` with the prompt on stdin (`args.prompt` is then the
    query, or `-`). Usage errors (exit 2) name the flag."""
    query = getattr(args, "query", None)
    if args.prompt is None:
        for flag in ("output_format", "input_format"):
            if getattr(args, flag, None) is not None:
                name = "--" + flag.replace("_", "-")
                parser.error(f"{name} applies only to headless runs (-p PROMPT)")
        if query is not None:
            parser.error(f"unrecognized argument {query!r} (a prompt needs -p: rawtrio -p PROMPT)")
        return
    if args.prompt == "":
        stream_input = args.input_format == "stream-json"
        if query is None and not stream_input and sys.stdin is not None and sys.stdin.isatty():
            parser.error("-p: give the prompt (rawtrio -p PROMPT) or pipe it on stdin")
        args.prompt = query if query is not None else "-"
    elif query is not None:
        parser.error(f"unrecognized argument {query!r} (the prompt is -p's: {args.prompt!r})")
    if args.input_format == "stream-json" and args.prompt != "-":
        parser.error(
            "--input-format stream-json reads the user messages from stdin: give -p "
            "without a prompt"
        )
