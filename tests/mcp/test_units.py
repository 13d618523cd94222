"""The parts that need no server: results, selection, the capped log, line splitting."""

from __future__ import annotations

import base64
from pathlib import Path

import mcp_types as types

from rawtrio.config.schema import McpServerConfig
from rawtrio.contracts import ToolStatus
from rawtrio.mcp import catalog
from rawtrio.mcp.log import LineSplitter, ServerLog
from rawtrio.mcp.results import MAX_IMAGE_BYTES, MAX_IMAGES, to_output
from rawtrio.messages import ImagePart
from rawtrio.tools.registry import ToolRegistry

#: A PNG signature and padding: 100 bytes that pass as a PNG by their signature.
PNG_BYTES = b"\x89PNG\r\n\x1a\n" + b"\0" * 92
PNG = base64.b64encode(PNG_BYTES).decode()
JPEG = base64.b64encode(b"\xff\xd8\xff\xe0" + b"\0" * 46).decode()


def image(data: str, mime_type: str = "image/png") -> types.ImageContent:
    return types.ImageContent(type="image", data=data, mime_type=mime_type)


def test_images_go_to_the_model_and_everything_is_described_in_the_text() -> None:
    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="look:"),
            image(PNG),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(uri="file:///a.txt", text="inside"),
            ),
            types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(
                    uri="file:///c.jpg", blob=JPEG, mime_type="image/jpeg"
                ),
            ),
            types.ResourceLink(type="resource_link", uri="file:///b.bin", name="b"),
            types.AudioContent(type="audio", data=PNG, mime_type="audio/wav"),
        ]
    )
    out = to_output(result, server="s", tool="t", cap=10_000)
    assert out.status is ToolStatus.OK
    assert out.content.splitlines() == [
        "look:",
        "[image 1: image/png, 100 bytes]",
        "[resource file:///a.txt]",
        "inside",
        "[resource file:///c.jpg: image 2, image/jpeg, 50 bytes]",
        "[resource link b: file:///b.bin]",
        "[audio audio/wav, 100 bytes: not shown, rawtrio does not pass audio to the model]",
    ]
    assert out.images == (ImagePart("image/png", PNG), ImagePart("image/jpeg", JPEG))
    assert out.details["media"] == (
        {"kind": "image", "mime_type": "image/png", "bytes": 100, "attached": True},
        {"kind": "resource", "mime_type": "image/jpeg", "bytes": 50, "attached": True},
        {"kind": "audio", "mime_type": "audio/wav", "bytes": 100, "attached": False},
    )


def test_an_image_is_sent_as_what_its_bytes_are_not_what_it_claims() -> None:
    result = types.CallToolResult(content=[image(JPEG, "image/png")])
    out = to_output(result, server="s", tool="t", cap=10_000)
    assert out.images == (ImagePart("image/jpeg", JPEG),)
    assert out.content == "[image 1: image/jpeg, 50 bytes]"


def test_data_that_is_not_a_supported_image_is_only_described() -> None:
    svg = base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg'/>").decode()
    result = types.CallToolResult(
        content=[image(svg, "image/svg+xml"), image("not base64!"), image(PNG)]
    )
    out = to_output(result, server="s", tool="t", cap=10_000)
    assert out.images == (ImagePart("image/png", PNG),)
    assert out.content.splitlines() == [
        "[image image/svg+xml, 41 bytes: not shown, not a PNG, JPEG, GIF or WebP image]",
        "[image image/png, 11 bytes: not shown, not a PNG, JPEG, GIF or WebP image]",
        "[image 1: image/png, 100 bytes]",
    ]


def test_base64_with_line_breaks_is_sent_without_them() -> None:
    wrapped = "\n".join(PNG[i : i + 76] for i in range(0, len(PNG), 76))
    out = to_output(types.CallToolResult(content=[image(wrapped)]), server="s", tool="t", cap=999)
    assert out.images == (ImagePart("image/png", PNG),)


def test_at_most_eight_images_go_to_the_model() -> None:
    result = types.CallToolResult(content=[image(PNG) for _ in range(MAX_IMAGES + 1)])
    out = to_output(result, server="s", tool="t", cap=10_000)
    assert len(out.images) == MAX_IMAGES
    assert out.content.splitlines()[-1] == (
        "[image image/png, 100 bytes: not shown, over the limit of 8 images and 5 MB per result]"
    )
    assert out.details["media"][-1]["attached"] is False


def test_images_past_five_megabytes_in_all_are_only_described() -> None:
    big = base64.b64encode(PNG_BYTES + b"\0" * (3 * 1024 * 1024)).decode()
    result = types.CallToolResult(content=[image(big), image(big), image(PNG)])
    out = to_output(result, server="s", tool="t", cap=10_000)
    assert [len(i.data) for i in out.images] == [len(big), len(PNG)]
    assert "not shown, over the limit of 8 images and 5 MB per result" in out.content
    assert out.content.splitlines()[-1] == "[image 2: image/png, 100 bytes]"
    assert MAX_IMAGE_BYTES == 5 * 1024 * 1024


def test_an_oversized_result_keeps_head_and_tail_with_a_note() -> None:
    text = "HEAD" + "x" * 100_000 + "TAIL"
    result = types.CallToolResult(content=[types.TextContent(type="text", text=text)])
    out = to_output(result, server="s", tool="t", cap=1000)
    assert out.content.startswith("HEAD")
    assert "TAIL\n[result truncated: 100008 bytes" in out.content
    assert len(out.content) < 1200
    assert out.details["truncated_bytes"] == 100_008 - 1000


def test_an_error_result_and_structured_content() -> None:
    failed = types.CallToolResult(
        content=[types.TextContent(type="text", text="no such repo")], is_error=True
    )
    assert to_output(failed, server="s", tool="t", cap=100).status is ToolStatus.ERROR
    structured = types.CallToolResult(content=[], structured_content={"n": 1})
    assert to_output(structured, server="s", tool="t", cap=100).content == '{"n": 1}'


def test_text_with_a_lone_surrogate_becomes_a_replacement_character() -> None:
    # What a server's JSON escape "\ud800" decodes to; encoding it to UTF-8 used to raise.
    result = types.CallToolResult(content=[types.TextContent(type="text", text="bad \ud800")])
    assert to_output(result, server="s", tool="t", cap=100).content == "bad \ufffd"
    structured = types.CallToolResult(content=[], structured_content={"n": "\udfff"})
    assert to_output(structured, server="s", tool="t", cap=100).content == '{"n": "\ufffd"}'


def test_secrets_are_redacted_from_results() -> None:
    result = types.CallToolResult(content=[types.TextContent(type="text", text="key=abcdef123")])
    out = to_output(
        result, server="s", tool="t", cap=100, redact=lambda s: s.replace("abcdef123", "[x]")
    )
    assert out.content == "key=[x]"


def _tool(name: str, **hints: bool) -> types.Tool:
    annotations = types.ToolAnnotations.model_validate(hints) if hints else None
    return types.Tool(name=name, input_schema={"type": "object"}, annotations=annotations)


def test_server_and_agent_globs_select_tools_in_order() -> None:
    config = McpServerConfig(command=["x"], tools=["*", "!secret_*"])
    tools = [_tool("b"), _tool("secret_a"), _tool("a"), _tool("c")]
    chosen = catalog.selected("gh", config, tools, ("*", "!mcp/gh/c"))
    assert [t.name for t in chosen] == ["b", "a"]


def test_read_only_comes_from_trusted_annotations_only() -> None:
    trusting = McpServerConfig(command=["x"])
    wary = McpServerConfig(command=["x"], trust_annotations=False)
    reader = _tool("r", read_only_hint=True)
    confused = _tool("c", read_only_hint=True, destructive_hint=True)
    assert catalog.read_only(reader, trusting)
    assert not catalog.read_only(reader, wary)
    assert not catalog.read_only(confused, trusting)
    assert not catalog.read_only(_tool("plain"), trusting)


def test_provider_names_of_mcp_ids_fit_the_providers_pattern() -> None:
    registry = ToolRegistry()
    assert registry.provider_name("mcp/github/create_issue") == "mcp__github__create_issue"
    long_id = catalog.tool_id("a.server", "t" * 80)
    name = registry.provider_name(long_id)
    assert len(name) == 64
    assert name.startswith("mcp__a_server__")


def test_the_tool_list_cache_round_trips_and_follows_the_config(tmp_path: Path) -> None:
    config = McpServerConfig(command=["x"])
    tools = [_tool("a", read_only_hint=True)]
    assert catalog.load_cached(tmp_path, "s", config) is None
    catalog.save_cached(tmp_path, "s", config, tools)
    assert catalog.load_cached(tmp_path, "s", config) == tools
    changed = McpServerConfig(command=["x", "--other"])
    assert catalog.load_cached(tmp_path, "s", changed) is None
    catalog.cache_path(tmp_path, "s", config).write_text("{not json")
    assert catalog.load_cached(tmp_path, "s", config) is None


def test_a_server_name_never_puts_its_cache_file_outside_the_cache_dir(tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "mcp"
    cache.mkdir(parents=True)
    config = McpServerConfig(command=["x"])
    for name in ("../../x", "..", "a/b", "/abs", "..\\x", "x\ud800"):
        assert catalog.cache_path(cache, name, config).parent == cache
        catalog.save_cached(cache, name, config, [_tool("a")])
        assert catalog.load_cached(cache, name, config) == [_tool("a")]
    assert sorted(p.parent for p in tmp_path.rglob("*.json")) == [cache] * 6


def test_the_log_keeps_the_last_lines_cut_to_length() -> None:
    log = ServerLog(max_lines=3, max_line_chars=10)
    for i in range(5):
        log.add("stderr", f"line {i} " + "z" * 20)
    assert log.dropped_lines == 2
    assert log.lines()[0] == "[stderr] line 2 zzz… [17 more chars]"


def test_line_splitting_bounds_an_endless_line() -> None:
    split = LineSplitter(max_bytes=10, keep=4)
    assert split.feed(b"ok\nabc") == [(b"ok", False, 2)]
    for _ in range(1000):
        assert split.feed(b"y" * 1000) == []
    assert split.buffered_bytes <= 4
    assert split.feed(b"end\nnext\n") == [(b"abcy", True, 1_000_006), (b"next", False, 4)]
