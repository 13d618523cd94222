"""A small, strict parser for the YAML that SKILL.md frontmatter uses.

Agent Skills frontmatter is a flat YAML mapping: `name`, `description`, and a few optional
keys (`license`, `compatibility`, `allowed-tools`, `metadata`). Rather than add a YAML
library for that, this reads the subset such files use and refuses everything else with an
error naming the line, so a skill never loads with a silently misread description:

- `key: value` with a plain, `'single'` or `"double"` quoted scalar on one line; a plain
  scalar may continue on more-indented lines (folded with spaces);
- block scalars `|` and `>`, with `-` / `+` chomping;
- flow lists of scalars `[a, "b c"]`, block lists (`- item` lines) and one level of nested
  `key: value` mapping (as `metadata:` uses);
- comments (`# …`) and blank lines.

Scalars stay strings (`true`, `1.0` are not converted). Anchors, aliases, tags, flow
mappings, duplicate keys and tab indentation are errors.
"""

from __future__ import annotations

import json
import re
from typing import Final

Value = str | list[str] | dict[str, str] | None


class FrontmatterError(ValueError):
    """Frontmatter that is missing or outside the supported YAML subset."""

    def __init__(self, message: str, line: int | None = None) -> None:
        self.line = line
        super().__init__(f"line {line}: {message}" if line is not None else message)


_KEY: Final = re.compile(r"^([A-Za-z_][A-Za-z0-9_.-]*)\s*:(?:\s+(.*))?$")
_BLOCK: Final = re.compile(r"^([|>])([+-]?)$")
_QUOTED: Final = re.compile(r'"(?:[^"\\]|\\.)*"' + r"|'(?:[^']|'')*'")
_UNSUPPORTED_START: Final = ("&", "*", "!", "{", "%", "@", "`")


def split_frontmatter(text: str) -> tuple[str, str, int]:
    """(frontmatter, body, line number where the frontmatter starts) of a SKILL.md."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n") != "---":
        raise FrontmatterError("the file must start with a '---' line opening the frontmatter")
    for i, line in enumerate(lines[1:], start=1):
        if line.rstrip("\r\n") == "---":
            return "".join(lines[1:i]), "".join(lines[i + 1 :]), 2
    raise FrontmatterError("no closing '---' line after the frontmatter")


def parse_frontmatter(text: str, first_line: int = 1) -> dict[str, Value]:
    """Parse the frontmatter mapping; FrontmatterError names the offending line."""
    return _Parser(text.splitlines(), first_line).mapping()


class _Parser:
    def __init__(self, lines: list[str], first_line: int) -> None:
        self.lines = lines
        self.first = first_line
        self.i = 0

    def error(self, message: str, index: int | None = None) -> FrontmatterError:
        return FrontmatterError(message, self.first + (self.i if index is None else index))

    def mapping(self) -> dict[str, Value]:
        result: dict[str, Value] = {}
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if _blank(line):
                self.i += 1
                continue
            if "\t" in line[: len(line) - len(line.lstrip())]:
                raise self.error("tabs are not allowed for indentation")
            if line[0] == " ":
                raise self.error("unexpected indentation")
            key, rest = self.key_value(line)
            if key in result:
                raise self.error(f"duplicate key {key!r}")
            self.i += 1
            result[key] = self.value(rest)
        return result

    def key_value(self, line: str) -> tuple[str, str]:
        match = _KEY.match(line.strip())
        if match is None:
            raise self.error(f"expected 'key: value', got {line.strip()[:60]!r}")
        return match.group(1), _strip_comment(match.group(2) or "")

    def value(self, rest: str) -> Value:
        if (block := _BLOCK.match(rest)) is not None:
            return self.block_scalar(block.group(1), block.group(2))
        if rest == "":
            return self.nested()
        if rest.startswith("["):
            return self.flow_list(rest)
        return self.scalar(rest, index=self.i - 1, continues=True)

    def scalar(self, text: str, *, index: int, continues: bool = False) -> str:
        if text.startswith('"'):
            if len(text) < 2 or not text.endswith('"'):
                raise self.error("unterminated double-quoted string", index)
            try:
                value = json.loads(text)
            except ValueError:
                raise self.error("invalid escape in double-quoted string", index) from None
            assert isinstance(value, str)
            return value
        if text.startswith("'"):
            inner = text[1:-1]
            if len(text) < 2 or not text.endswith("'") or re.search(r"(?<!')'(?!')", inner):
                raise self.error("unterminated single-quoted string", index)
            return inner.replace("''", "'")
        if text.startswith(_UNSUPPORTED_START):
            raise self.error(f"unsupported YAML ({text[0]!r}: anchors, tags, flow maps)", index)
        if text.startswith(("- ", "? ")) or text == "-":
            raise self.error("unexpected list item; put lists on their own lines", index)
        parts = [text]
        while continues and self.i < len(self.lines) and _indent(self.lines[self.i]) > 0:
            if not _blank(self.lines[self.i]):
                parts.append(_strip_comment(self.lines[self.i].strip()))
            self.i += 1
        return " ".join(parts)

    def flow_list(self, text: str) -> list[str]:
        index = self.i - 1
        if not text.endswith("]"):
            raise self.error("a flow list must close on the same line", index)
        inner = text[1:-1].strip()
        if not inner:
            return []
        items = re.findall(r'\s*("(?:[^"\\]|\\.)*"|\'(?:[^\']|\'\')*\'|[^,]+)\s*(?:,|$)', inner)
        if ",".join(items).replace(" ", "") != inner.replace(" ", ""):
            raise self.error("malformed flow list", index)
        return [self.scalar(item.strip(), index=index) for item in items]

    def nested(self) -> Value:
        start = self.i
        block = []
        while self.i < len(self.lines) and (
            _blank(self.lines[self.i]) or _indent(self.lines[self.i]) > 0
        ):
            block.append(self.i)
            self.i += 1
        items = [j for j in block if not _blank(self.lines[j])]
        if not items:
            return None
        if all(self.lines[j].strip().startswith("-") for j in items):
            return [self._list_item(j) for j in items]
        nested: dict[str, str] = {}
        indent = _indent(self.lines[items[0]])
        for j in items:
            if _indent(self.lines[j]) != indent:
                raise self.error("nested mappings may hold only 'key: value' lines", j)
            self.i = j
            key, rest = self.key_value(self.lines[j])
            if key in nested:
                raise self.error(f"duplicate key {key!r}", j)
            if rest == "" or _BLOCK.match(rest) or rest.startswith("["):
                raise self.error("nested values must be single-line scalars", j)
            nested[key] = self.scalar(rest, index=j)
        self.i = block[-1] + 1 if block else start
        return nested

    def _list_item(self, j: int) -> str:
        text = self.lines[j].strip()
        if not text.startswith("- ") and text != "-":
            raise self.error("expected '- item'", j)
        return self.scalar(_strip_comment(text[1:].strip()), index=j)

    def block_scalar(self, style: str, chomp: str) -> str:
        lines: list[str] = []
        indent: int | None = None
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if _blank(line):
                lines.append("")
            elif indent is None and _indent(line) > 0:
                indent = _indent(line)
                lines.append(line[indent:])
            elif indent is not None and _indent(line) >= indent:
                lines.append(line[indent:])
            else:
                break
            self.i += 1
        trailing = len(lines) - len("\n".join(lines).rstrip("\n").split("\n"))
        content = lines[: len(lines) - trailing] if trailing else lines
        text = "\n".join(content) if style == "|" else _fold(content)
        if chomp == "-" or not text:
            return text
        return text + ("\n" * (trailing + 1) if chomp == "+" else "\n")


def _fold(lines: list[str]) -> str:
    out = ""
    for k, line in enumerate(lines):
        if k == 0:
            out = line
        elif line == "" or line.startswith(" "):
            out += "\n" + line
        elif lines[k - 1] == "" or lines[k - 1].startswith(" "):
            out += ("\n" if lines[k - 1].startswith(" ") else "") + line
        else:
            out += " " + line
    return out


def _blank(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _strip_comment(text: str) -> str:
    """Drop a trailing ` # comment` outside quotes."""
    quoted = _QUOTED.match(text)
    if quoted is not None:
        rest = text[quoted.end() :].strip()
        return quoted.group(0) if not rest or rest.startswith("#") else text.strip()
    match = re.search(r"\s#", text)
    return (text[: match.start()] if match else text).strip()
