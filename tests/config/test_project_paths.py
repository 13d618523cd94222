"""Paths a project's config file names are read only from inside the project (issue 13).

`skill_dirs` from `.rawtrio/config.toml` needs no trust (like `.rawtrio/skills/`), so it
must not reach outside the project: an entry outside it — absolute, `../..`, `~`, or a
symlink that leads out — is left out with a notice naming the file and the entry. The
user's own config file may name any folder. And "allow always" rules are written into the
project only, never through a `.rawtrio` link that leads out of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from rawtrio.config import (
    CliOverrides,
    ConfigFileError,
    TrustStore,
    resolve_session_config,
    save_allow_rule,
)
from rawtrio.config.edit import default_project_file


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """User config and state in tmp_path; `~` is tmp_path/home."""
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "user.toml").write_text("")
    return {
        "RAWTRIO_CONFIG": str(tmp_path / "user.toml"),
        "RAWTRIO_STATE_DIR": str(tmp_path / "state"),
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "work" / "repo"
    (root / ".git").mkdir(parents=True)
    (root / ".rawtrio").mkdir()
    return root


def project_config(repo: Path, text: str) -> Path:
    path = repo / ".rawtrio" / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("entry", "target"),
    [
        ("{tmp}/home/.ssh", "home/.ssh"),
        ("../other", "work/other"),  # relative to the project root: beside the repo
        ("~/.ssh", "home/.ssh"),
    ],
)
def test_a_projects_skill_dir_outside_it_is_skipped_with_a_notice(
    tmp_path: Path, repo: Path, home: dict[str, str], entry: str, target: str
) -> None:
    (tmp_path / target).mkdir(parents=True)
    entry = entry.format(tmp=tmp_path)
    config = project_config(repo, f'skill_dirs = ["{entry}", "skills-here"]\n')
    agent = resolve_session_config(CliOverrides(), repo, home)
    assert agent.skill_dirs == (str(repo / "skills-here"),)
    (notice,) = agent.notices
    assert notice == (
        f"{config}: skill_dirs[0] = {entry!r} resolves to {tmp_path / target}, outside the "
        f"project {repo}; rawtrio reads a project's skills only from inside the project; skipped"
    )


def test_a_projects_skill_dir_linked_out_of_it_is_skipped(
    tmp_path: Path, repo: Path, home: dict[str, str]
) -> None:
    outside = tmp_path / "secrets"
    outside.mkdir()
    (repo / "tools").mkdir()
    (repo / "tools" / "skills").symlink_to(outside)
    project_config(repo, 'skill_dirs = ["tools/skills"]\n')
    agent = resolve_session_config(CliOverrides(), repo, home)
    assert agent.skill_dirs == ()
    (notice,) = agent.notices
    assert f"skill_dirs[0] = 'tools/skills' resolves to {outside}, outside the project" in (notice)


def test_a_projects_skill_dir_inside_it_is_kept_resolved(
    tmp_path: Path, repo: Path, home: dict[str, str]
) -> None:
    (repo / "tools" / "skills").mkdir(parents=True)
    (repo / "alias").symlink_to(repo / "tools" / "skills")
    project_config(repo, f'skill_dirs = ["tools/skills", "alias", "{repo}/missing"]\n')
    agent = resolve_session_config(CliOverrides(), repo, home)
    assert agent.skill_dirs == (
        str(repo / "tools" / "skills"),
        str(repo / "tools" / "skills"),
        str(repo / "missing"),  # a missing folder is fine: discovery finds nothing there
    )
    assert agent.notices == ()


def test_the_users_config_may_name_any_skill_dir(
    tmp_path: Path, repo: Path, home: dict[str, str]
) -> None:
    Path(home["RAWTRIO_CONFIG"]).write_text(
        f'skill_dirs = ["{tmp_path}/team-skills", "~/more"]\n', encoding="utf-8"
    )
    agent = resolve_session_config(CliOverrides(), repo, home)
    assert agent.skill_dirs == (str(tmp_path / "team-skills"), str(tmp_path / "home" / "more"))
    assert agent.notices == ()


def test_an_allow_rule_is_never_saved_through_a_rawtrio_link_out_of_the_project(
    tmp_path: Path, repo: Path, home: dict[str, str]
) -> None:
    """`.rawtrio -> ~/.config/rawtrio` would turn "allow always for this project" into a rule
    in the user's own config file, applied everywhere."""
    users = tmp_path / "home" / ".config" / "rawtrio"
    users.mkdir(parents=True)
    (repo / ".rawtrio").rmdir()
    (repo / ".rawtrio").symlink_to(users)
    target = default_project_file(repo)
    with pytest.raises(ConfigFileError) as caught:
        save_allow_rule(target, "default", "bash", trust_store=TrustStore.default(home))
    assert str(caught.value) == (
        f"{target}: resolves to {users / 'config.toml'}, outside the project {repo}; rawtrio "
        "writes a project's config only inside the project, so the rule was not saved"
    )
    assert list(users.iterdir()) == []


@pytest.mark.parametrize(
    "setting", ['permission_mode = "bypass"', 'permission_mode = "accept-edits"']
)
def test_a_project_cannot_stop_rawtrio_asking_without_trust(
    repo: Path, home: dict[str, str], setting: str
) -> None:
    project_config(repo, f"[agents.default]\n{setting}\nmax_steps = 4\n")
    untrusted = resolve_session_config(CliOverrides(), repo, home)
    assert (untrusted.permission_mode, untrusted.max_steps) == ("default", 50)
    assert "permission_mode accept-edits/bypass" in untrusted.notices[0]
    trusted = resolve_session_config(CliOverrides(trust=True), repo, home)
    assert trusted.permission_mode == setting.split('"')[1]


def test_a_project_cannot_unconfine_the_file_tools_without_trust(
    repo: Path, home: dict[str, str]
) -> None:
    Path(home["RAWTRIO_CONFIG"]).write_text("[agents.default]\nconfine_paths = true\n")
    project_config(repo, "[agents.default]\nconfine_paths = false\n")
    untrusted = resolve_session_config(CliOverrides(), repo, home)
    assert untrusted.confine_paths is True
    assert "confine_paths = false" in untrusted.notices[0]
    # Turning it on, or a stricter mode, needs no trust.
    project_config(repo, '[agents.default]\nconfine_paths = true\npermission_mode = "plan"\n')
    stricter = resolve_session_config(CliOverrides(), repo, home)
    assert (stricter.confine_paths, stricter.permission_mode, stricter.notices) == (
        True,
        "plan",
        (),
    )
