"""Apply the README's "Installing it in your project" to a ``startproject proj`` project.

The README is the single source: each ```python block of that section whose
first line names a file under ``proj/`` is written to that file (the whole
file), or appended to it when the line ends in ``, at the end``. The ``pip
install`` line of the section is read too, so the check installs the same
extras and packages a reader would. Blocks without such a first line (shell
sessions, examples) are prose. Standard library only: this runs before
anything is installed.

    python readme_snippets.py apply README.md SITE_DIR   # writes the files, lists them
    python readme_snippets.py pip-args README.md WHEEL   # pip install's arguments, one a line
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

SECTION = "## Installing it in your project"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
TARGET = re.compile(r"^# (proj/[\w/]+\.py)(, at the end)?$")
PACKAGE = "symfonic-django"


def install_section(readme: str) -> str:
    start = readme.index(SECTION)
    end = readme.find("\n## ", start + len(SECTION))
    return readme[start:] if end == -1 else readme[start:end]


def snippets(section: str) -> list[tuple[str, bool, str]]:
    """``(path, append, text)`` for every block that names its file."""
    found = []
    for language, body in FENCE.findall(section):
        first, _, rest = body.partition("\n")
        target = TARGET.match(first)
        if language == "python" and target:
            found.append((target.group(1), bool(target.group(2)), rest))
    return found


def apply(readme_path: str, site: str) -> None:
    blocks = snippets(install_section(Path(readme_path).read_text()))
    if not blocks:
        sys.exit(f"no file snippets found in {readme_path!r} under {SECTION!r}")
    for path, append, text in blocks:
        target = Path(site) / path
        if append:
            if not target.exists():
                sys.exit(f"{path} should exist (startproject makes it) before appending to it")
            with target.open("a") as f:
                f.write("\n" + text)
        else:
            target.write_text(text)
        print(f"  {'appended to' if append else 'wrote'} {path}")


def pip_args(readme_path: str, wheel: str) -> None:
    """The section's ``pip install`` arguments, the package replaced by the local wheel."""
    section = install_section(Path(readme_path).read_text())
    line = next((ln for ln in section.splitlines() if ln.startswith("pip install ")), None)
    if line is None:
        sys.exit(f"no 'pip install' line under {SECTION!r}")
    args = []
    for arg in shlex.split(line)[2:]:
        requirement = re.fullmatch(r"([\w.-]+)(\[[\w,-]+\])?", arg)
        if requirement and requirement.group(1) == PACKAGE:
            args.append(wheel + (requirement.group(2) or ""))
        else:
            args.append(arg)
    if not any(a.startswith(wheel) for a in args):
        sys.exit(f"the README's pip install line does not install {PACKAGE}: {line!r}")
    print("\n".join(args))


if __name__ == "__main__":
    command, readme, where = sys.argv[1:4]
    {"apply": apply, "pip-args": pip_args}[command](readme, where)
