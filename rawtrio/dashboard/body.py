"""Reading a request's JSON body: bounded, strict, and with an error that names what was
wrong (docs/dashboard-api.md, "Security rules").

- `Content-Type` must be `application/json` (415);
- more than `max_bytes` — by `Content-Length`, or counted while reading a body sent
  without one — is 413, and reading stops there;
- bytes that are not UTF-8, text that is not JSON (NaN and Infinity included), or JSON
  holding a lone surrogate (`"\\ud800"`, which no writer can encode) are 400
  `invalid_json`;
- JSON that the endpoint's model refuses is 422 `validation_failed`, with pydantic's
  errors reduced to where and what (`loc`, `msg`, `type`) — never the value sent.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from rawtrio.dashboard.errors import ApiError
from rawtrio.unicode_safety import find_lone_surrogate

M = TypeVar("M", bound=BaseModel)

#: The largest body any endpoint takes (a prompt of up to 1 MiB fits with its JSON).
MAX_BODY_BYTES = 2 * 1024 * 1024


def too_large(limit: int) -> ApiError:
    return ApiError(
        413,
        "payload_too_large",
        f"the body is larger than {limit} bytes",
        {"limit": limit},
    )


async def read_raw(request: Request, max_bytes: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise ApiError(400, "bad_request", "Content-Length is not a number") from None
        if size > max_bytes:
            raise too_large(max_bytes)
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > max_bytes:
            raise too_large(max_bytes)
        chunks.append(chunk)
    return b"".join(chunks)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_json(raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        message = f"the body is not UTF-8 (byte {exc.start})"
        raise ApiError(400, "invalid_json", message, {"position": exc.start}) from None
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ApiError(
            400, "invalid_json", f"the body is not JSON: {exc.msg}", {"position": exc.pos}
        ) from None
    except (ValueError, RecursionError) as exc:
        raise ApiError(400, "invalid_json", f"the body is not JSON: {exc}") from None
    found = find_lone_surrogate(value, "body")
    if found is not None:
        where, escape = found
        raise ApiError(
            400, "invalid_json", f"{where} holds {escape}, which is not Unicode text", {}
        )
    return value


def validation_error(exc: ValidationError) -> ApiError:
    errors = [
        {"loc": ["body", *e["loc"]], "msg": e["msg"], "type": e["type"]} for e in exc.errors()
    ]
    first = errors[0] if errors else {"loc": ["body"], "msg": "invalid"}
    where = ".".join(str(part) for part in first["loc"])
    return ApiError(422, "validation_failed", f"{where}: {first['msg']}", {"errors": errors})


async def read_body(
    request: Request, model: type[M], *, optional: bool = False, max_bytes: int = MAX_BODY_BYTES
) -> M:
    """The request's body as `model`; with `optional`, an empty body is `model()`."""
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/json":
        if optional and not (await read_raw(request, max_bytes)).strip():
            return model()
        raise ApiError(
            415,
            "unsupported_media_type",
            f"send the body as application/json (got {media or 'no Content-Type'})",
        )
    raw = await read_raw(request, max_bytes)
    if optional and not raw.strip():
        return model()
    value = parse_json(raw)
    if not isinstance(value, dict):
        raise ApiError(
            422,
            "validation_failed",
            "body: expected a JSON object",
            {"errors": [{"loc": ["body"], "msg": "expected a JSON object", "type": "dict_type"}]},
        )
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise validation_error(exc) from None
