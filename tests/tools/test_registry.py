from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import pytest

from rawtrio.contracts import BUILTIN_TOOL_NAMES, PROVIDER_TOOL_NAME_RE
from rawtrio.frozen import freeze, thaw
from rawtrio.tools.base import Tool, ToolContext, ToolOutput
from rawtrio.tools.builtin import builtin_registry
from rawtrio.tools.registry import ToolRegistry
from rawtrio.tools.settings import ToolSettings

_SCHEMA = {
    "type": "object",
    "properties": {
        "command": {"type": "string"},
        "timeout_s": {"type": "number"},
        "mode": {"enum": ["fast", "slow"]},
        "items": {"type": "array", "items": {"type": "integer"}},
    },
    "required": ["command"],
    "additionalProperties": False,
}


async def _noop(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    return ToolOutput.ok("")


def make_tool(tool_id: str, schema: Any = None) -> Tool:
    return Tool(tool_id, f"the {tool_id} tool", freeze(schema or _SCHEMA), _noop)


def registry_with(*ids: str) -> ToolRegistry:
    registry = ToolRegistry()
    for tool_id in ids:
        registry.register(make_tool(tool_id))
    return registry


def test_plain_ids_keep_their_name() -> None:
    assert registry_with("read_file").provider_name("read_file") == "read_file"


def test_namespaced_id_with_space_maps_to_valid_name() -> None:
    registry = registry_with("mcp/some server/tool")
    name = registry.provider_name("mcp/some server/tool")
    assert name == "mcp__some_server__tool"
    assert registry.lookup(name) is registry.tools()[0]


def test_non_ascii_id_maps_to_valid_name() -> None:
    registry = registry_with("mcp/服务/工具.v2")
    assert PROVIDER_TOOL_NAME_RE.match(registry.provider_name("mcp/服务/工具.v2"))


def test_long_ids_are_truncated_with_a_stable_distinct_hash() -> None:
    a, b = "mcp/" + "x" * 96, "mcp/" + "x" * 95 + "y"
    assert len(a) == len(b) == 100
    registry = registry_with(a, b)
    name_a, name_b = registry.provider_name(a), registry.provider_name(b)
    for name in (name_a, name_b):
        assert PROVIDER_TOOL_NAME_RE.match(name)
        assert len(name) == 64
    assert name_a != name_b
    assert name_a == registry_with(a).provider_name(a)  # deterministic
    assert registry.lookup(name_b) is registry.tools()[1]


def test_colliding_ids_get_distinct_names() -> None:
    ids = ("a/b", "a__b", "x y", "x_y", "x.y", "x:y")
    registry = registry_with(*ids)
    names = [registry.provider_name(i) for i in ids]
    assert len(set(names)) == len(ids)
    assert names[0] == "a__b"
    for tool_id, name in zip(ids, names, strict=True):
        assert PROVIDER_TOOL_NAME_RE.match(name)
        tool = registry.lookup(name)
        assert tool is not None
        assert tool.id == tool_id


def test_collision_on_a_long_hashed_name_still_gets_a_distinct_name() -> None:
    long_id = "t" * 100
    registry = registry_with(long_id)
    taken = registry.provider_name(long_id)
    registry.register(make_tool(taken))  # an id that literally equals the hashed name
    names = {registry.provider_name(long_id), registry.provider_name(taken)}
    assert len(names) == 2
    assert all(PROVIDER_TOOL_NAME_RE.match(n) for n in names)


def test_unregistered_id_gets_the_name_it_would_be_given() -> None:
    registry = registry_with("a/b")
    assert registry.provider_name("a__b") != "a__b"
    assert registry.lookup("nope") is None


def test_duplicate_id_is_refused() -> None:
    registry = registry_with("bash")
    with pytest.raises(ValueError, match="already registered"):
        registry.register(make_tool("bash"))
    assert len(registry) == 1


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "nonsense"}}},
        {"type": "object", "required": "a"},
        {"type": "string"},
        {"properties": {}},
    ],
)
def test_bad_schema_is_refused(schema: dict[str, Any]) -> None:
    registry = ToolRegistry()
    with pytest.raises(ValueError, match="input_schema"):
        registry.register(make_tool("t", schema))
    assert len(registry) == 0
    assert "t" not in registry


def test_empty_id_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        ToolRegistry().register(make_tool(""))


def test_specs_follow_registration_order() -> None:
    registry = registry_with("zeta", "mcp/s/alpha", "beta")
    specs = registry.specs()
    assert [s.name for s in specs] == ["zeta", "mcp__s__alpha", "beta"]
    assert specs[1].description == "the mcp/s/alpha tool"
    assert specs[1].input_schema["required"] == ("command",)
    assert "zeta" in registry
    assert "mcp__s__alpha" not in registry  # membership is by id
    assert len(registry) == 3


def test_valid_arguments_pass() -> None:
    registry = registry_with("t")
    tool = registry.tools()[0]
    assert registry.validate(tool, freeze({"command": "ls", "timeout_s": 2})) is None


def test_missing_required_field_is_named() -> None:
    registry = registry_with("t")
    message = registry.validate(registry.tools()[0], freeze({}))
    assert message is not None
    assert "missing required field" in message
    assert "'command'" in message


def test_wrong_types_name_each_field_and_expectation() -> None:
    registry = registry_with("t")
    args = freeze({"command": 3, "timeout_s": "soon", "items": [1, "two"]})
    message = registry.validate(registry.tools()[0], args)
    assert message is not None
    assert "field 'command': expected string, got a number (3)" in message
    assert "field 'timeout_s': expected number, got a string ('soon')" in message
    assert "field 'items[1]': expected integer" in message


def test_unexpected_field_and_bad_enum_are_explained() -> None:
    registry = registry_with("t")
    args = freeze({"command": "x", "colour": "red", "mode": "medium"})
    message = registry.validate(registry.tools()[0], args)
    assert message is not None
    assert "unexpected field(s) 'colour'" in message
    assert "field 'mode': expected one of 'fast', 'slow', got 'medium'" in message


def test_malformed_json_is_reported() -> None:
    registry = registry_with("mcp/s/t")
    message = registry.validate(registry.tools()[0], None)
    assert message is not None
    assert "not valid JSON" in message
    assert "mcp__s__t" in message


def test_non_object_arguments_are_reported() -> None:
    registry = registry_with("t")
    message = registry.validate(registry.tools()[0], freeze(["ls"]))
    assert message == "The arguments for tool 't' must be a JSON object, not an array."


def test_builtin_registry_registers_through_the_same_path() -> None:
    registry = builtin_registry()
    names = [s.name for s in registry.specs()]
    assert set(BUILTIN_TOOL_NAMES) <= set(names)
    assert names[-5:] == ["bash_output", "bash_stop", "todo_write", "todo_read", "task"]
    bash = registry.lookup("bash")
    assert bash is not None
    assert bash.key_argument == "command"
    assert registry.validate(bash, freeze({"command": "ls"})) is None
    message = registry.validate(bash, freeze({"command": "ls", "timeout_s": -1}))
    assert message is not None
    assert "timeout_s" in message
    read = registry.lookup("read_file")
    assert read is not None
    assert read.read_only


def test_builtin_registry_can_select_tools() -> None:
    registry = builtin_registry(only={"read_file"})
    assert [t.id for t in registry.tools()] == ["read_file"]
    with pytest.raises(ValueError, match="unknown built-in tool"):
        builtin_registry(only={"read_file", "teleport"})


def test_every_built_in_schema_is_valid_draft_2020_12() -> None:
    """The registry trusts the built-ins' schemas (no jsonschema import before the first
    request); this is where they are checked."""
    from jsonschema import Draft202012Validator

    registry = builtin_registry(ToolSettings())
    assert {t.id for t in registry} >= set(BUILTIN_TOOL_NAMES)
    for tool in registry:
        Draft202012Validator.check_schema(thaw(tool.input_schema))


def test_a_session_of_built_ins_does_not_import_jsonschema_before_a_call() -> None:
    code = (
        "import sys; from rawtrio.tools.settings import ToolSettings;"
        "from rawtrio.tools.builtin import builtin_registry;"
        "r = builtin_registry(ToolSettings()); r.specs();"
        "assert 'jsonschema' not in sys.modules, 'imported at registration';"
        "t = r.get('read_file'); assert r.validate(t, {}) is not None;"
        "assert 'jsonschema' in sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
