from __future__ import annotations

import pytest

from rawtrio.skills.frontmatter import FrontmatterError, parse_frontmatter, split_frontmatter


def test_flat_keys_with_plain_and_quoted_scalars() -> None:
    meta = parse_frontmatter(
        "name: pdf-tools\n"
        "description: 'It''s for PDFs: forms, text'  \n"
        'license: "Apache-2.0 \\u00e9"  # trailing comment\n'
        "version: 1.0\n"
    )
    assert meta == {
        "name": "pdf-tools",
        "description": "It's for PDFs: forms, text",
        "license": "Apache-2.0 é",
        "version": "1.0",
    }


def test_folded_and_literal_block_scalars() -> None:
    meta = parse_frontmatter(
        "description: >\n  Extract text,\n  fill forms.\n\n  Second.\n"
        "notes: |-\n  line 1\n    indented\n"
        "kept: |+\n  a\n\n"
    )
    assert meta["description"] == "Extract text, fill forms.\nSecond.\n"
    assert meta["notes"] == "line 1\n  indented"
    assert meta["kept"] == "a\n\n"


def test_plain_scalar_continued_on_indented_lines() -> None:
    meta = parse_frontmatter("description: Use this when\n  the user asks\nname: x\n")
    assert meta == {"description": "Use this when the user asks", "name": "x"}


def test_lists_and_one_level_of_mapping() -> None:
    meta = parse_frontmatter(
        "allowed-tools: [Read, \"Bash(git:*)\", 'Write']\n"
        "tags:\n  - one\n  - 'two'\n"
        'metadata:\n  author: me\n  version: "2"\n'
        "empty:\n"
    )
    assert meta == {
        "allowed-tools": ["Read", "Bash(git:*)", "Write"],
        "tags": ["one", "two"],
        "metadata": {"author": "me", "version": "2"},
        "empty": None,
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: a\nname: b\n", "line 2: duplicate key 'name'"),
        ("name: &anchor a\n", "line 1: unsupported YAML"),
        ("name: !!str a\n", "line 1: unsupported YAML"),
        ("meta: {a: 1}\n", "line 1: unsupported YAML"),
        ('name: "open\n', "line 1: unterminated double-quoted"),
        ("name: 'open\n", "line 1: unterminated single-quoted"),
        ("just text\n", "line 1: expected 'key: value'"),
        ("name: a\n\tdescription: b\n", "line 2: tabs are not allowed"),
        ("list: [a, b\n", "line 1: a flow list must close"),
        ("meta:\n  a: 1\n    b: 2\n", "line 3: nested mappings"),
        ("meta:\n  a:\n", "line 2: nested values must be single-line"),
        ("name: - a\n", "line 1: unexpected list item"),
    ],
)
def test_unsupported_or_broken_yaml_names_the_line(text: str, message: str) -> None:
    with pytest.raises(FrontmatterError, match=message):
        parse_frontmatter(text)


def test_line_numbers_count_from_the_file_start() -> None:
    with pytest.raises(FrontmatterError, match="line 3"):
        parse_frontmatter("name: a\nname: b\n", first_line=2)


def test_split_frontmatter() -> None:
    head, body, first = split_frontmatter("\ufeff---\nname: a\n---\n# Body\ntext\n")
    assert (head, body, first) == ("name: a\n", "# Body\ntext\n", 2)


@pytest.mark.parametrize("text", ["# no frontmatter\n", "---\nname: a\n", ""])
def test_missing_frontmatter_is_an_error(text: str) -> None:
    with pytest.raises(FrontmatterError):
        split_frontmatter(text)
