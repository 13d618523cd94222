"""The OpenAPI 3.1 description of the dashboard's API, generated from the code: the
endpoint table (`rawtrio.dashboard.api.ENDPOINTS`) and the pydantic models of the bodies
and answers (`rawtrio.dashboard.models`).

    python -m rawtrio.dashboard.openapi > docs/dashboard-openapi.json

tests/dashboard/test_openapi.py checks that the committed file is what this writes.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from rawtrio.dashboard import models as m
from rawtrio.dashboard.api import ENDPOINTS, Endpoint

_REASONS = {
    400: "bad request: a parameter, a cursor, the token in the query, or a body that is not JSON",
    401: "no token, or the wrong one",
    403: "a foreign Host (DNS rebinding) or Origin (another site)",
    404: "no such session, operation or permission request",
    409: "conflicts with the session's state or an earlier request",
    413: "the body is larger than the limit",
    415: "the body is not application/json",
    422: "the body is JSON but not what the endpoint takes",
    500: "a bug; the server's log has it",
    503: "not configured (API key, configuration), the store failed, or shutting down",
}


def _models() -> list[type[BaseModel]]:
    found: dict[str, type[BaseModel]] = {"ErrorAnswer": m.ErrorAnswer}
    for ep in ENDPOINTS:
        for model in (ep.body, *ep.answers.values()):
            if model is not None:
                found[model.__name__] = model
    return [found[name] for name in sorted(found)]


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _operation(ep: Endpoint) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": ep.name,
        "summary": ep.summary,
        "security": [{"bearer": []}],
    }
    if ep.params:
        op["parameters"] = [
            {
                "name": p.name,
                "in": p.where,
                "required": p.required or p.where == "path",
                "description": p.description,
                "schema": dict(p.schema),
            }
            for p in ep.params
        ]
    if ep.body is not None:
        op["requestBody"] = {
            "required": not ep.body_optional,
            "content": {"application/json": {"schema": _ref(ep.body)}},
        }
    responses: dict[str, Any] = {}
    for status, model in sorted(ep.answers.items()):
        answer: dict[str, Any] = {"description": "success"}
        if ep.stream:
            answer["description"] = "the event stream (docs/dashboard-api.md)"
            answer["content"] = {"text/event-stream": {"schema": {"type": "string"}}}
        elif model is not None:
            answer["content"] = {"application/json": {"schema": _ref(model)}}
        responses[str(status)] = answer
    for status in sorted(set(ep.errors)):
        responses[str(status)] = {
            "description": _REASONS[status],
            "content": {"application/json": {"schema": _ref(m.ErrorAnswer)}},
        }
    op["responses"] = responses
    return op


def openapi() -> dict[str, Any]:
    """The document, built from the endpoint table and the models."""
    _, defs = models_json_schema(
        [(model, "serialization") for model in _models()],
        ref_template="#/components/schemas/{model}",
    )
    paths: dict[str, dict[str, Any]] = {}
    for ep in ENDPOINTS:
        paths.setdefault(ep.path, {})[ep.method.lower()] = _operation(ep)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "rawtrio dashboard API",
            "version": "1",
            "description": "The browser dashboard's API (docs/dashboard-api.md), generated "
            "from the code: python -m rawtrio.dashboard.openapi",
        },
        "servers": [{"url": "http://127.0.0.1:{port}", "variables": {"port": {"default": "0"}}}],
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": defs.get("$defs", {}),
        },
        "paths": paths,
    }


def main() -> None:
    json.dump(openapi(), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
