"""Permission modes and models, offered as ACP modes and as config options, kept in sync."""

from __future__ import annotations

from typing import Any, Final

from rawtrio.permissions.rules import PermissionMode
from rawtrio.runtime import Session

MODES: Final = (
    (PermissionMode.DEFAULT, "Default", "Ask before calls the rules do not allow"),
    (PermissionMode.ACCEPT_EDITS, "Accept edits", "File edits run without asking"),
    (PermissionMode.PLAN, "Plan", "Read-only: look around and plan, change nothing"),
    (PermissionMode.BYPASS, "Bypass permissions", "Run every call without asking"),
)


def mode_state(session: Session) -> dict[str, Any]:
    return {
        "currentModeId": session.policy.mode.value,
        "availableModes": [{"id": m.value, "name": name, "description": d} for m, name, d in MODES],
    }


def config_options(session: Session) -> list[dict[str, Any]]:
    options: list[dict[str, Any]] = [
        {
            "id": "mode",
            "name": "Mode",
            "category": "mode",
            "type": "select",
            "currentValue": session.policy.mode.value,
            "options": [{"value": m.value, "name": n, "description": d} for m, n, d in MODES],
        }
    ]
    names = model_names(session)
    options.append(
        {
            "id": "model",
            "name": "Model",
            "category": "model",
            "type": "select",
            "currentValue": model_name(session),
            "options": [{"value": n, "name": n} for n in names],
        }
    )
    return options


def model_name(session: Session) -> str:
    return session.model_name


def model_names(session: Session) -> list[str]:
    names = list(session.model_names)
    current = session.model_name
    return names if current in names else [current, *names]
