"""The package's shape, held: modules of one concern and functions a reader can follow.

The limits are the ones docs/decisions.md gives ("A codebase to learn from"): no module
over 400 lines but the models and the initial migration, and no function or method over a
cyclomatic complexity of 15 as radon counts it. A change that grows past them fails here,
so it is split when it is written rather than found later.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from radon.complexity import cc_visit
from radon.visitors import Class

PACKAGE = Path(__file__).resolve().parent.parent / "symfonic_django"
MAX_LINES = 400
MAX_COMPLEXITY = 15
LONG_BY_NATURE = {"models.py"}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts)


def _functions(path: Path) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    for block in cc_visit(path.read_text()):
        if isinstance(block, Class):
            found.extend((f"{block.name}.{m.name}", m.complexity) for m in block.methods)
        else:
            found.append((block.name, block.complexity))
    return found


def test_the_walk_finds_the_package() -> None:
    names = {p.name for p in _modules()}
    assert {"models.py", "pg.py", "transitions.py"} <= names


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_is_short_enough_to_read(path: Path) -> None:
    if path.name in LONG_BY_NATURE and path.parent == PACKAGE:
        return
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(PACKAGE)} has {lines} lines"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_function_is_too_branched_to_follow(path: Path) -> None:
    over = [(name, cc) for name, cc in _functions(path) if cc > MAX_COMPLEXITY]
    assert over == [], f"{path.relative_to(PACKAGE)}: {over}"
