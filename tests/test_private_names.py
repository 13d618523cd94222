"""No module of rawtrio uses another module's private (`_name`) names.

A module's underscored names are its own: another module that needs one gets it made
public where it belongs, or moved. Dunders (`__version__`) are public."""

from __future__ import annotations

import ast
from pathlib import Path

import rawtrio

PACKAGE = Path(rawtrio.__file__).parent


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def private_uses(source: str) -> list[str]:
    """Private names of rawtrio modules imported (`from rawtrio.x import _y`) or reached
    through a module (`rawtrio.x._y`)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rawtrio"):
            found += [f"{node.module}.{a.name}" for a in node.names if _private(a.name)]
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            base = _dotted(node.value)
            if base is not None and base.split(".")[0] == "rawtrio":
                found.append(f"{base}.{node.attr}")
    return found


def test_the_check_finds_a_private_import_and_a_private_attribute() -> None:
    source = "from rawtrio.a import _b, c\nimport rawtrio.d\nrawtrio.d._e()\nx._f\n"
    assert private_uses(source) == ["rawtrio.a._b", "rawtrio.d._e"]


def test_no_module_uses_another_modules_private_names() -> None:
    found = {
        str(path.relative_to(PACKAGE.parent)): uses
        for path in sorted(PACKAGE.rglob("*.py"))
        if (uses := private_uses(path.read_text(encoding="utf-8")))
    }
    assert found == {}
