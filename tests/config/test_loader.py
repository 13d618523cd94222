"""Loading, merging, validating and trusting config files."""

from __future__ import annotations

from pathlib import Path

import pytest

from rawtrio.config import (
    STARTER,
    CliOverrides,
    ConfigFileError,
    RawtrioConfig,
    TrustStore,
    VariableResolver,
    load_config,
    render_json_schema,
    resolve_session_config,
    save_allow_rule,
    write_starter,
)
from rawtrio.config.loader import read_toml
from rawtrio.errors import NoCredentials

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """An environment whose user config and state live in tmp_path."""
    (tmp_path / "user.toml").write_text("")
    return {
        "RAWTRIO_CONFIG": str(tmp_path / "user.toml"),
        "RAWTRIO_STATE_DIR": str(tmp_path / "state"),
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / ".rawtrio").mkdir()
    return root


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def resolve(repo: Path, env: dict[str, str], **flags: object) -> object:
    return resolve_session_config(CliOverrides(**flags), repo, env)  # type: ignore[arg-type]


def test_negative_max_steps_names_file_key_and_expectation(tmp_path: Path) -> None:
    f = write(tmp_path / "c.toml", "[agents.coder]\nmax_steps = -1\n")
    with pytest.raises(ConfigFileError) as info:
        load_config(f, None)
    assert str(info.value) == f"{f}: agents.coder.max_steps: expected a positive integer, got -1"
    assert info.value.key_path == "agents.coder.max_steps"
    assert info.value.source == str(f)


def test_misspelled_key_is_an_error_with_a_suggestion(tmp_path: Path) -> None:
    f = write(tmp_path / "c.toml", "[agents.coder]\nmax_step = 3\n")
    with pytest.raises(
        ConfigFileError,
        match=r"agents\.coder\.max_step: unknown key \(did you mean 'max_steps'\?\)",
    ):
        load_config(f, None)


def test_wrong_type_is_reported_without_coercion(tmp_path: Path) -> None:
    f = write(tmp_path / "c.toml", '[agents.coder]\nmax_steps = "10"\n')
    with pytest.raises(ConfigFileError, match=r'max_steps: expected an integer, got "10"'):
        load_config(f, None)


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    f = write(tmp_path / "c.toml", "[agents\n")
    with pytest.raises(ConfigFileError, match="invalid TOML") as info:
        load_config(f, None)
    assert info.value.source == str(f)


def test_every_problem_in_a_file_is_reported(tmp_path: Path) -> None:
    f = write(
        tmp_path / "c.toml",
        '[agents.a]\nmax_steps = 0\npermission_mode = "yolo"\n[[agents.a.permissions]]\n'
        'match = "bash"\neffect = "allow"\nwhen = { path = "command", regex = "(" }\n',
    )
    with pytest.raises(ConfigFileError) as info:
        load_config(f, None)
    keys = {p.key_path for p in info.value.problems}
    assert {
        "agents.a.max_steps",
        "agents.a.permission_mode",
        "agents.a.permissions[0].when.regex",
    } <= keys


def test_unknown_model_reference_is_an_error(tmp_path: Path) -> None:
    f = write(tmp_path / "c.toml", '[agents.a]\nmodel = "nope"\n')
    with pytest.raises(ConfigFileError, match=r"agents\.a\.model: expected a name in \[models\]"):
        load_config(f, None)


def test_unknown_variable_reference_is_an_error(tmp_path: Path) -> None:
    f = write(
        tmp_path / "c.toml",
        '[models.m]\nprovider = "anthropic"\nmodel_id = "x"\napi_key = { var = "k" }\n',
    )
    with pytest.raises(
        ConfigFileError, match=r"models\.m\.api_key\.var: expected a name in \[variables\]"
    ):
        load_config(f, None)


def test_missing_prompt_file_is_an_error(tmp_path: Path) -> None:
    f = write(tmp_path / "c.toml", '[agents.a]\nprompt_file = "missing.md"\n')
    with pytest.raises(ConfigFileError, match=r"agents\.a\.prompt_file: expected an existing file"):
        load_config(f, None)


def test_explicit_user_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="cannot read the file"):
        load_config(tmp_path / "absent.toml", None, user_file_required=True)


def test_project_merges_over_user_and_permissions_concatenate(
    repo: Path, home: dict[str, str]
) -> None:
    write(
        Path(home["RAWTRIO_CONFIG"]),
        "[agents.coder]\nmax_steps = 10\ntool_output_cap = 5\n"
        '[[agents.coder.permissions]]\nmatch = "bash"\neffect = "deny"\n',
    )
    write(
        repo / ".rawtrio/config.toml",
        'default_agent = "coder"\n[agents.coder]\nmax_steps = 20\n'
        '[[agents.coder.permissions]]\nmatch = "bash"\neffect = "ask"\n',
    )
    agent = resolve_session_config(CliOverrides(), repo, home)
    assert agent.name == "coder"
    assert agent.max_steps == 20
    assert agent.tool_output_cap == 5
    assert [r.effect for r in agent.permission_rules] == ["deny", "ask"]
    assert "user.toml" in agent.rule_origins[0]
    assert ".rawtrio/config.toml" in agent.rule_origins[1]


def test_flag_beats_env_beats_files(repo: Path, home: dict[str, str]) -> None:
    write(Path(home["RAWTRIO_CONFIG"]), "[agents.a]\nmax_steps = 3\n[agents.b]\n")
    env = {**home, "RAWTRIO_AGENT": "a", "RAWTRIO_MAX_STEPS": "7"}
    assert resolve_session_config(CliOverrides(), repo, env).max_steps == 7
    assert resolve_session_config(CliOverrides(max_steps=9), repo, env).max_steps == 9
    assert resolve_session_config(CliOverrides(agent="b"), repo, env).name == "b"
    assert resolve_session_config(CliOverrides(), repo, home).name == "default"


def test_bad_environment_value_names_the_variable(repo: Path, home: dict[str, str]) -> None:
    with pytest.raises(ConfigFileError, match="RAWTRIO_MAX_STEPS: expected a positive integer"):
        resolve_session_config(CliOverrides(), repo, {**home, "RAWTRIO_MAX_STEPS": "many"})
    with pytest.raises(ConfigFileError, match="RAWTRIO_PERMISSION_MODE: expected one of"):
        resolve_session_config(CliOverrides(), repo, {**home, "RAWTRIO_PERMISSION_MODE": "yolo"})


def test_unknown_agent_lists_the_known_ones(repo: Path, home: dict[str, str]) -> None:
    with pytest.raises(ConfigFileError, match=r"--agent: expected an agent name \(default\)"):
        resolve_session_config(CliOverrides(agent="ghost"), repo, home)


def test_model_flag_takes_a_name_or_a_raw_id(repo: Path, home: dict[str, str]) -> None:
    write(
        Path(home["RAWTRIO_CONFIG"]),
        '[models.local]\nprovider = "openai-chat"\nmodel_id = "qwen"\nbase_url = "http://h/v1"\n',
    )
    named = resolve_session_config(CliOverrides(model="local"), repo, home).model
    assert (named.provider, named.model_id, named.base_url) == (
        "openai-chat",
        "qwen",
        "http://h/v1",
    )
    raw = resolve_session_config(CliOverrides(model="m-1", provider="openai-responses"), repo, home)
    assert (raw.model.provider, raw.model.model_id, raw.model.api_key.env) == (
        "openai-responses",
        "m-1",
        "OPENAI_API_KEY",
    )


def test_project_file_with_hooks_is_ignored_until_trusted(repo: Path, home: dict[str, str]) -> None:
    project = write(
        repo / ".rawtrio/config.toml",
        '[agents.default]\nmax_steps = 4\n[[hooks]]\nevent = "Stop"\ncommand = "true"\n',
    )
    untrusted = resolve_session_config(CliOverrides(), repo, home)
    assert untrusted.max_steps == 50
    assert untrusted.hooks == ()
    assert any("trust" in n and "hooks" in n for n in untrusted.notices)
    trusted = resolve_session_config(CliOverrides(trust=True), repo, home)
    assert trusted.max_steps == 4
    # Remembered for this folder and content...
    assert resolve_session_config(CliOverrides(), repo, home).max_steps == 4
    # ...but not for changed content.
    project.write_text(project.read_text() + "\n# changed\n")
    assert resolve_session_config(CliOverrides(), repo, home).max_steps == 50


def test_project_file_without_code_needs_no_trust(repo: Path, home: dict[str, str]) -> None:
    write(repo / ".rawtrio/config.toml", "[agents.default]\nmax_steps = 4\n")
    agent = resolve_session_config(CliOverrides(), repo, home)
    assert agent.max_steps == 4
    assert agent.notices == ()


def test_project_allow_rules_and_base_urls_need_trust(repo: Path, home: dict[str, str]) -> None:
    write(
        repo / ".rawtrio/config.toml",
        '[[agents.default.permissions]]\nmatch = "bash"\neffect = "allow"\n',
    )
    agent = resolve_session_config(CliOverrides(), repo, home)
    assert agent.permission_rules == ()
    assert "allow rules" in agent.notices[0]


def test_agents_md_from_repo_root_down_to_cwd(repo: Path, home: dict[str, str]) -> None:
    write(repo / "AGENTS.md", "root rules")
    write(repo / "pkg/AGENTS.md", "pkg rules")
    write(repo.parent / "AGENTS.md", "outside the repo")
    agent = resolve_session_config(CliOverrides(), repo / "pkg", home)
    prompt = agent.system_prompt("BASE")
    assert prompt.startswith("BASE")
    assert prompt.index("root rules") < prompt.index("pkg rules")
    assert "outside the repo" not in prompt


def test_agent_prompt_file_is_relative_to_its_config_file(repo: Path, home: dict[str, str]) -> None:
    write(repo / ".rawtrio/prompts/p.md", "Be terse.")
    write(repo / ".rawtrio/config.toml", '[agents.default]\nprompt_file = "prompts/p.md"\n')
    # A project's prompt_file needs trust (tests/config/test_project_files.py).
    prompt = resolve_session_config(CliOverrides(trust=True), repo, home).system_prompt("BASE")
    assert prompt == "BASE\n\nBe terse."


def test_tool_globs_select_and_exclude(repo: Path, home: dict[str, str]) -> None:
    write(
        Path(home["RAWTRIO_CONFIG"]), '[agents.default]\ntools = ["*", "!mcp/*", "mcp/gh/read"]\n'
    )
    agent = resolve_session_config(CliOverrides(), repo, home)
    ids = ["bash", "mcp/gh/read", "mcp/gh/write"]
    assert agent.select_tools(ids) == ("bash", "mcp/gh/read")


def test_saved_allow_rule_keeps_the_project_trusted(repo: Path, home: dict[str, str]) -> None:
    store = TrustStore.default(home)
    project = repo / ".rawtrio/config.toml"
    save_allow_rule(project, "default", "bash", "command", r"\Als\Z", trust_store=store)
    agent = resolve_session_config(CliOverrides(), repo, home)
    assert [(r.match, r.effect) for r in agent.permission_rules] == [("bash", "allow")]
    assert agent.permission_rules[0].when is not None
    save_allow_rule(project, "default", "read_file", trust_store=store)
    assert len(resolve_session_config(CliOverrides(), repo, home).permission_rules) == 2


def test_saving_into_an_inline_permissions_array_fails_cleanly(repo: Path) -> None:
    text = '[agents.default]\npermissions = [{ match = "bash", effect = "ask" }]\n'
    project = write(repo / ".rawtrio/config.toml", text)
    with pytest.raises(ConfigFileError, match="add it by hand"):
        save_allow_rule(project, "default", "bash")
    assert project.read_text() == text


def test_starter_file_is_valid_and_not_overwritten(tmp_path: Path) -> None:
    RawtrioConfig.model_validate(read_toml(write_starter(tmp_path / "c.toml")))
    with pytest.raises(ConfigFileError, match="already exists"):
        write_starter(tmp_path / "c.toml")
    assert "[agents.coder]" in STARTER


def test_shipped_json_schema_is_up_to_date() -> None:
    assert (DOCS / "config.schema.json").read_text(encoding="utf-8") == render_json_schema(), (
        "regenerate: python -m rawtrio.config.json_schema > docs/config.schema.json"
    )


async def test_api_key_is_read_lazily_through_a_variable(repo: Path, home: dict[str, str]) -> None:
    write(
        Path(home["RAWTRIO_CONFIG"]),
        '[models.m]\nprovider = "openai-chat"\nmodel_id = "x"\napi_key = { var = "k" }\n'
        '[variables.k]\nenv = "MY_KEY"\n[agents.default]\nmodel = "m"\nrequest_timeout_s = 5\n',
    )
    agent = resolve_session_config(CliOverrides(), repo, home)
    variables = VariableResolver(agent.variables, env={"MY_KEY": "sk-xyz1"}, cwd=repo)
    settings = await agent.provider_settings(variables)
    assert (settings.kind, settings.model, settings.api_key) == ("openai-chat", "x", "sk-xyz1")
    assert settings.request_timeout_s == 5
    assert variables.redactor.redact("sk-xyz1") == "[redacted:k]"


async def test_missing_default_api_key_is_no_credentials(repo: Path, home: dict[str, str]) -> None:
    agent = resolve_session_config(CliOverrides(), repo, home)
    with pytest.raises(NoCredentials, match="ANTHROPIC_API_KEY"):
        await agent.provider_settings(VariableResolver({}, env={}, cwd=repo))


def test_config_check_describes_the_resolved_agent(repo: Path, home: dict[str, str]) -> None:
    write(Path(home["RAWTRIO_CONFIG"]), STARTER)
    text = resolve_session_config(CliOverrides(), repo, home).describe()
    assert "agent: coder" in text
    assert "anthropic claude-sonnet-4-5" in text
    assert "ask bash" in text
