"""Writing to the project config: "allow always" answers saved as allow rules.

The rule is appended as a new `[[agents.NAME.permissions]]` entry at the end of
`.rawtrio/config.toml` (created if missing), so it comes last and wins. The text is checked
to still parse and validate before the file is replaced atomically; a file whose layout
cannot take the entry (say, `permissions = [...]` written inline) is left untouched and a
`ConfigFileError` says why.

An allow rule makes a project file need trust (`rawtrio.config.trust`). Saving is the user's
own act, so when the file was in effect before (trusted, or needing no trust), the folder
is trusted for the new content; an ignored, untrusted file stays untrusted.
"""

from __future__ import annotations

import json
import os
import tempfile
import tomllib
from pathlib import Path

from rawtrio.config.errors import ConfigFileError, key_path, problem
from rawtrio.config.loader import (
    PROJECT_FILE,
    needs_trust,
    project_root,
    read_layer,
    read_toml,
    repo_root,
)
from rawtrio.config.trust import TrustStore, file_digest


def default_project_file(cwd: Path) -> Path:
    """Where a new project file goes: the repository root, else the working directory."""
    return (repo_root(cwd.resolve()) or cwd.resolve()) / PROJECT_FILE


def save_allow_rule(
    project_file: Path,
    agent: str,
    match: str,
    when_path: str | None = None,
    when_regex: str | None = None,
    *,
    trust_store: TrustStore | None = None,
) -> None:
    folder = project_file.parent.parent
    _check_inside_project(project_file, project_root(folder))
    existed = project_file.exists()
    old = project_file.read_text(encoding="utf-8") if existed else ""
    was_in_effect = (
        not existed
        or not needs_trust(read_toml(project_file))
        or (trust_store is not None and trust_store.is_trusted(folder, file_digest(project_file)))
    )
    entry = [f"\n[[{key_path(('agents', agent, 'permissions'))}]]"]
    entry.append(f"match = {_toml_str(match)}")
    entry.append('effect = "allow"')
    if when_path is not None and when_regex is not None:
        entry.append(f"when = {{ path = {_toml_str(when_path)}, regex = {_toml_str(when_regex)} }}")
    sep = "" if not old or old.endswith("\n") else "\n"
    new = old + sep + "\n".join(entry) + "\n"
    try:
        tomllib.loads(new)
    except tomllib.TOMLDecodeError as e:
        raise ConfigFileError(
            [
                problem(
                    project_file,
                    key_path(("agents", agent, "permissions")),
                    f"cannot append an allow rule to this file ({e}); add it by hand",
                )
            ]
        ) from None
    project_file.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=project_file.parent, prefix=".config-", suffix=".toml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(new)
        read_layer("project", Path(tmp))  # the new text must still validate on its own
        os.replace(tmp, project_file)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if was_in_effect and trust_store is not None:
        trust_store.trust(folder, file_digest(project_file))


def _check_inside_project(project_file: Path, root: Path) -> None:
    """The file is written only inside its project: a `.rawtrio` that is a symlink out of
    the project (to your own config folder, say) must not receive project allow rules."""
    real = Path(os.path.realpath(project_file))
    if not real.is_relative_to(root):
        raise ConfigFileError(
            [
                problem(
                    project_file,
                    "",
                    f"resolves to {real}, outside the project {root}; rawtrio writes a "
                    "project's config only inside the project, so the rule was not saved",
                )
            ]
        )


def _toml_str(value: str) -> str:
    """A TOML basic string (JSON's escapes are a subset TOML accepts)."""
    return json.dumps(value, ensure_ascii=False)
