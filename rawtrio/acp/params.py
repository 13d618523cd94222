"""Checking the params of ACP requests: each wrong field is named in a -32602 error.

Untrusted input is validated here, at the edge (STYLE.md §9), by method, field by field:
the ACP SDK's pydantic models are lenient (they coerce and drop), so they are not used.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rawtrio.acp.jsonrpc import INVALID_PARAMS, RpcError
from rawtrio.frozen import json_type_name


def invalid(message: str) -> RpcError:
    return RpcError(INVALID_PARAMS, f"invalid params: {message}")


def string(params: Mapping[str, Any], key: str, *, required: bool = True) -> str | None:
    value = params.get(key)
    if value is None:
        if required:
            raise invalid(f"{key} is required (a string)")
        return None
    if not isinstance(value, str):
        raise invalid(f"{key} must be a string, got {json_type_name(value)}")
    return value


def required_string(params: Mapping[str, Any], key: str) -> str:
    value = string(params, key)
    assert value is not None
    if not value:
        raise invalid(f"{key} must not be empty")
    return value


def integer(params: Mapping[str, Any], key: str) -> int:
    value = params.get(key)
    if value is None:
        raise invalid(f"{key} is required (an integer)")
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(f"{key} must be an integer, got {json_type_name(value)}")
    return value


def obj(params: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = params.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid(f"{key} must be an object, got {json_type_name(value)}")
    return value


def array(params: Mapping[str, Any], key: str, *, required: bool = False) -> list[Any]:
    value = params.get(key)
    if value is None:
        if required:
            raise invalid(f"{key} is required (an array)")
        return []
    if not isinstance(value, list):
        raise invalid(f"{key} must be an array, got {json_type_name(value)}")
    return value


def absolute_dir(params: Mapping[str, Any], key: str = "cwd") -> Path:
    value = required_string(params, key)
    path = Path(value)
    if not path.is_absolute():
        raise invalid(f"{key} must be an absolute path, got {value!r}")
    if not path.is_dir():
        raise invalid(f"{key}: {value} is not a directory")
    return path


def prompt_text(params: Mapping[str, Any]) -> str:
    """The user's message from `prompt` (ContentBlock[]): text, resource links and
    embedded text resources. Images and audio are not advertised, so they are refused."""
    blocks = array(params, "prompt", required=True)
    parts: list[str] = []
    for i, block in enumerate(blocks):
        where = f"prompt[{i}]"
        if not isinstance(block, dict):
            raise invalid(f"{where} must be an object, got {json_type_name(block)}")
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if not isinstance(text, str):
                raise invalid(f"{where}.text must be a string, got {json_type_name(text)}")
            parts.append(text)
        elif kind == "resource_link":
            uri = block.get("uri")
            if not isinstance(uri, str):
                raise invalid(f"{where}.uri must be a string, got {json_type_name(uri)}")
            name = block.get("name")
            parts.append(f"[@{name if isinstance(name, str) else uri}]({uri})")
        elif kind == "resource":
            res = block.get("resource")
            if not isinstance(res, dict) or not isinstance(res.get("uri"), str):
                raise invalid(f"{where}.resource must be an object with a string uri")
            if not isinstance(res.get("text"), str):
                raise invalid(f"{where}.resource: only text resources are supported")
            parts.append(f'<context uri="{res["uri"]}">\n{res["text"]}\n</context>')
        elif kind in ("image", "audio"):
            raise invalid(
                f"{where}: {kind} content is not supported (promptCapabilities.{kind} is false)"
            )
        else:
            raise invalid(f"{where}.type: unknown content type {kind!r}")
    text = "\n".join(parts)
    if not text.strip():
        raise invalid("prompt has no text")
    return text
