"""The JSON Schema of the config file, generated from the pydantic models.

`docs/config.schema.json` is this output; a test fails when it is stale. Regenerate with
`python -m rawtrio.config.json_schema > docs/config.schema.json`. Editors that read JSON
Schema for TOML (Taplo, "Even Better TOML") can use it for completion and checks.
"""

from __future__ import annotations

import json
from typing import Any

from rawtrio.config.schema import RawtrioConfig

SCHEMA_ID = "https://rawtrio.invalid/config.schema.json"


def config_json_schema() -> dict[str, Any]:
    schema = RawtrioConfig.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "rawtrio configuration (config.toml)",
        **{k: v for k, v in schema.items() if k != "title"},
    }


def render_json_schema() -> str:
    return json.dumps(config_json_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    print(render_json_schema(), end="")
