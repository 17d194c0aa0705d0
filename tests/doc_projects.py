"""A doc's project, run as written: the python blocks of a page of ``docs/`` whose first
line names a file under ``proj/`` become a ``proj`` package on the path, with what the page
leaves to the reader supplied, and the page's settings block applied.

Each framework's doc (``langgraph.md``, ``pydantic-ai.md``, ``openai-agents.md``) declares
its ``DocProject`` in its tests' ``docs_project`` module; the snippet tests and the browser
tests of the review pages use it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
TARGET = re.compile(r"^# (proj/[\w/]+\.py)$")
#: The agent module and its SYMFONIC entry: what a page promises in under 20 lines.
SNIPPET = ("proj/agents.py", "proj/settings.py")
MAX_LINES = 19


@dataclass(frozen=True)
class DocProject:
    """``doc``'s project: ``files`` are the blocks the package is made of, ``supplied``
    what the page leaves to the reader (path -> source)."""

    doc: str
    files: tuple[str, ...]
    supplied: dict[str, str]

    @property
    def path(self) -> Path:
        return DOCS / self.doc

    def python_blocks(self) -> list[str]:
        return [body for language, body in FENCE.findall(self.path.read_text())
                if language == "python"]

    def file_blocks(self) -> dict[str, str]:
        """The page's python blocks whose first line names a file under ``proj/``, by path."""
        found = {}
        for body in self.python_blocks():
            target = TARGET.match(body.partition("\n")[0])
            if target:
                found[target.group(1)] = body
        return found

    def snippet_lines(self) -> int:
        blocks = self.file_blocks()
        assert set(SNIPPET) <= set(blocks), f"{self.doc} names no {SNIPPET}"
        return sum(len(blocks[path].splitlines()) for path in SNIPPET)

    @contextmanager
    def installed(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                  settings: Any) -> Iterator[None]:
        """The ``proj`` package on the path, the page's settings block applied."""
        blocks = self.file_blocks()
        for path, text in {**self.supplied, **{p: blocks[p] for p in self.files}}.items():
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).write_text(text)
        monkeypatch.syspath_prepend(str(tmp_path))
        namespace: dict[str, Any] = {}
        exec(blocks["proj/settings.py"], namespace)
        settings.SYMFONIC = {**settings.SYMFONIC, "AGENTS": {
            **settings.SYMFONIC["AGENTS"], **namespace["SYMFONIC"]["AGENTS"]}}
        try:
            yield
        finally:
            for name in [n for n in sys.modules if n == "proj" or n.startswith("proj.")]:
                del sys.modules[name]
