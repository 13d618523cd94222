"""Claude Code's permission patterns as rawtrio's permission rules (docs/compat.md,
"Permissions").

The one mapping of a Claude Code permission entry (`Bash(npm run test:*)`,
`Read(./secrets/**)`, `Edit`, `mcp__server__tool`) onto rawtrio rules: each entry becomes
one or more `(tool glob, argument path, regex)` triples. Used by the `permissions` of
`.claude/settings.json` (`rawtrio.config.claude_settings`) and by `--allowedTools` /
`--disallowedTools` (`rawtrio.cli.flags`). Tool names map through
`rawtrio.compat.claude_code`'s table.

Stdlib only: the attached `rawtrio -p` client parses its flags with this before anything
heavy is loaded.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final, Literal, NamedTuple

from rawtrio.compat.claude_code import rawtrio_tool_id

Effect = Literal["allow", "ask", "deny"]

#: Characters that chain, substitute or redirect in a shell command: an allow rule never
#: lets a command through that has one past the part it names.
_SHELL_META: Final = r"[^\n;&|`$()<>]"
_ENTRY: Final = re.compile(r"\A([\w*-]+)(?:\((.*)\))?\Z", re.DOTALL)
#: Tools Claude Code's `Read(...)` / `Edit(...)` rules cover, with their path arguments.
_READ_TOOLS: Final = (
    ("read_file", ("path", "files[*].path")),
    ("list_dir", ("path",)),
    ("glob", ("path",)),
    ("grep", ("path",)),
)
_EDIT_TOOLS: Final = (("edit_file", ("path",)), ("write_file", ("path",)))
PATH_TOOLS: Final[Mapping[str, tuple[tuple[str, tuple[str, ...]], ...]]] = {
    "Read": _READ_TOOLS,
    "Edit": _EDIT_TOOLS,
    "MultiEdit": (("edit_file", ("path",)),),
    "Write": (("write_file", ("path",)),),
    "Glob": (("glob", ("path",)),),
    "Grep": (("grep", ("path",)),),
    "LS": (("list_dir", ("path",)),),
}


class MappedRule(NamedTuple):
    """One rawtrio rule: the tool glob and, for a conditional rule, the argument path and
    the regex its value must match."""

    match: str
    path: str | None = None
    regex: str | None = None


class Unmapped(ValueError):
    """The entry cannot be mapped; the text completes "'<entry>' …"."""


class NotAnEntry(Unmapped):
    """Not of the form `Tool` or `Tool(specifier)`."""


class UnknownTool(Unmapped):
    """A tool name rawtrio has no tool for (`WebFetch`, `Task`, a typo)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"names {name}, a tool rawtrio does not have")
        self.name = name


def map_entry(
    entry: object, effect: Effect, *, base: Path, cwd: Path, home: Path
) -> tuple[MappedRule, ...]:
    """The rawtrio rules one Claude Code permission entry becomes. `base` is where a path
    pattern's leading `/` starts (the settings file's project folder; the working
    directory for a command-line rule). Raises `Unmapped` (a `NotAnEntry` or
    `UnknownTool` where that is the reason)."""
    return tuple(_map(entry, effect, base=base, cwd=cwd, home=home))


def _map(
    entry: object, effect: Effect, *, base: Path, cwd: Path, home: Path
) -> Iterator[MappedRule]:
    if not isinstance(entry, str):
        raise Unmapped("is not a string")
    found = _ENTRY.match(entry.strip())
    if found is None:
        raise NotAnEntry("is not of the form Tool or Tool(specifier)")
    name, spec = found.group(1), found.group(2)
    bare = spec is None or spec.strip() in ("", "*")
    if name.startswith("mcp__"):
        if spec is not None:
            raise Unmapped("has a specifier; MCP rules take none")
        server, _, tool = name.removeprefix("mcp__").partition("__")
        if not server or "*" in server:
            raise Unmapped("has no server name after mcp__")
        yield MappedRule(f"mcp/{server}/{tool or '*'}")
        return
    if name == "Bash":
        if spec is None or bare:
            yield MappedRule("bash")
        else:
            yield MappedRule("bash", "command", bash_regex(spec, effect))
        return
    if name in PATH_TOOLS:
        for tool, paths in PATH_TOOLS[name]:
            if spec is None or bare or spec.strip() == "**":
                yield MappedRule(tool)
                continue
            regex = path_regex(spec.strip(), base=base, cwd=cwd, home=home, effect=effect)
            for path in paths:
                yield MappedRule(tool, path, regex)
        return
    tool_id = rawtrio_tool_id(name)
    if tool_id is None:
        raise UnknownTool(name)
    if not bare:
        raise Unmapped(f"has a specifier, which rawtrio cannot apply to {tool_id}")
    yield MappedRule(tool_id)


def bash_regex(spec: str, effect: Effect) -> str:
    """A regex over `bash`'s `command` for a Claude Code `Bash(...)` specifier.

    `prefix:*` matches commands that start with `prefix`; `*` elsewhere is any text; other
    text is the exact command. For `allow`, the whole command must match and what a
    wildcard covers may hold no shell operator, substitution or redirection (as Claude Code:
    `Bash(safe:*)` does not allow `safe && other`). For `ask` and `deny`, the named command
    is found anywhere it could start a command (after `;`, `&&`, `|`, `$(`, …), so chaining
    cannot slip past it."""
    spec = spec.strip()
    prefix = spec.endswith(":*")
    text = spec[:-2] if prefix else spec
    pieces = [re.escape(p) for p in text.split("*")]
    if effect == "allow":
        body = f"{_SHELL_META}*".join(pieces)
        tail = f"(?:[ \\t]{_SHELL_META}*)?" if prefix else ""
        return rf"\A\s*{body}{tail}\s*\Z"
    pieces = [re.sub(r"(\\ )+", r"\\s+", p) for p in pieces]
    body = ".*".join(pieces)
    start = r"(?:\A|[;&|`(\n!{]|\s)\s*"
    end = "" if prefix or spec.endswith("*") else r"\s*(?:\Z|[;&|`)\n}])"
    return f"{start}{body}{end}"


def path_regex(spec: str, *, base: Path, cwd: Path, home: Path, effect: Effect) -> str:
    """A regex over a file tool's `path` argument for a Claude Code path specifier
    (gitignore-style: `//abs`, `~/x`, `/x` from `base`, `./x` or `x` from the working
    directory; no `/` but a trailing one: any depth below the working directory; `**` any
    folders; `dir/**` the folder and all inside it).

    Paths reach tools as written (absolute, relative to the working directory, `~/…`), so
    the regex accepts each form. For `allow` a path with a `..` part never matches, and a
    pattern of any depth matches only below the working directory; for `ask` and `deny`
    the pattern also matches after any `/`, so `a/../secrets/x`, symlink-free detours and
    other directories are still caught (rules are not a sandbox: docs/security.md)."""
    anywhere = "/" not in spec.rstrip("/")  # before `/**` goes: `src/**` is anchored
    spec = spec.removesuffix("/**") or spec  # `dir/**`: the folder and all inside it
    if spec.startswith("//"):
        target = Path(spec[1:])
    elif spec.startswith("~/"):
        target = home / spec[2:]
    elif spec.startswith("/"):
        target = base / spec[1:]
    else:
        target = cwd / spec.removeprefix("./")
    glob = glob_regex(spec.rstrip("/").split("/")[-1] if anywhere else str(target).rstrip("/"))
    inside = r"(?:/.*)?\Z"
    if anywhere and effect == "allow":  # any depth, below the working directory only
        forms = [
            rf"\A(?![/~])(?:\./)?(?:.*/)?{glob}{inside}",
            rf"\A{re.escape(cwd.as_posix().rstrip('/'))}/(?:.*/)?{glob}{inside}",
        ]
    elif anywhere:
        forms = [rf"(?:\A|/){glob}{inside}"]
    else:
        forms = [rf"\A{glob}{inside}"]
        for root, lead in ((cwd, r"(?![/~])(?:\./)?"), (home, "~/")):
            with contextlib.suppress(ValueError):
                rel = Path(str(target)).relative_to(root).as_posix()
                forms.append(rf"\A{lead}{glob_regex(rel)}{inside}")
        if effect != "allow":
            with contextlib.suppress(ValueError):
                rel = Path(str(target)).relative_to(cwd).as_posix()
                forms.append(rf"/{glob_regex(rel)}{inside}")
    regex = "|".join(f"(?:{f})" for f in forms)
    if effect == "allow":
        regex = rf"\A(?!.*(?:\A|/)\.\.(?:/|\Z))(?:{regex})"
    return regex


def glob_regex(glob: str) -> str:
    """A gitignore-style glob as a regex: `**/` any folders, `**` anything, `*` and `?`
    within one path part."""
    out = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)
