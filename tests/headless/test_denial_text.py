"""What the model is told when a configured rule denies a call names the rule and the file
relative to `~` or the project, never the absolute path of the user's files (issue 13,
item 11)."""

from __future__ import annotations

import json

from rawtrio.testing.fake_model import FakeModelServer
from tests.headless.support import Isolation, run_rawtrio

RULES = """
[[agents.default.permissions]]
match = "bash"
effect = "deny"
when = { path = "command", regex = "^echo" }
"""


def test_a_denial_names_the_rule_without_absolute_config_paths(
    iso: Isolation, recorder: FakeModelServer
) -> None:
    user = iso.home / ".config" / "rawtrio" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text(RULES)
    (iso.cwd / ".git").mkdir(parents=True)
    (iso.cwd / ".rawtrio").mkdir()
    (iso.cwd / ".rawtrio" / "config.toml").write_text(RULES.replace("^echo", "^echo tool"))
    done = run_rawtrio(
        iso,
        "-p",
        "use a tool",
        "--base-url",
        recorder.base_url,
        "--trust",
        env={"ANTHROPIC_API_KEY": "test-key", "RAWTRIO_PERMISSION_MODE": "default"},
    )
    assert done.returncode == 0, done
    _first, second = recorder.requests
    result = json.dumps(second.body["messages"][-1])
    assert "denied by rule deny bash" in result
    # The last matching rule is the project's: named relative to the project.
    assert "(.rawtrio/config.toml: agents.default.permissions[0])" in result
    assert str(iso.root) not in result


def test_a_users_rule_is_named_relative_to_home(iso: Isolation, recorder: FakeModelServer) -> None:
    user = iso.home / ".config" / "rawtrio" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text(RULES)
    done = run_rawtrio(
        iso,
        "-p",
        "use a tool",
        "--base-url",
        recorder.base_url,
        env={"ANTHROPIC_API_KEY": "test-key", "RAWTRIO_PERMISSION_MODE": "default"},
    )
    assert done.returncode == 0, done
    result = json.dumps(recorder.requests[1].body["messages"][-1])
    assert "(~/.config/rawtrio/config.toml: agents.default.permissions[0])" in result
    assert str(iso.root) not in result
