"""Apply the README's "Installing it in your project" to a ``startproject proj`` project.

The README is the single source: each ```python block of that section whose
first line names a file under ``proj/`` is written to that file (the whole
file), or appended to it when the line ends in ``, at the end``. The ``pip
install`` lines of the section are read too, so the check installs the same
extras and packages a reader would: the package is named there by the path of
a checkout, ``/path/to/symfonic_django``, which the README says to replace with
the checkout's directory or a wheel built in it; the check puts its wheel there.
Blocks without such a first line (shell sessions, examples) are prose.
Standard library only: this runs before anything is installed.

    python readme_snippets.py apply README.md SITE_DIR        # writes the files, lists them
    python readme_snippets.py commands README.md              # step 6's commands, one a line
    python readme_snippets.py pip-args README.md WHEEL N      # the N-th (0, 1, ...) pip install
                                                              # line's arguments, one a line;
                                                              # exit 3 when there is none
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

SECTION = "## Installing it in your project"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
TARGET = re.compile(r"^# (proj/[\w/]+\.py)(, at the end)?$")
#: What the README's pip line names the package by, to be replaced by a checkout or a wheel.
PLACEHOLDER = "/path/to/symfonic_django"


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


def commands(readme_path: str) -> None:
    """The commands of the ```bash block that runs ``manage.py migrate`` (step 6), one a line,
    without their comments: the check runs them as written (adding only what a terminal
    would ask, and where a server listens)."""
    section = install_section(Path(readme_path).read_text())
    for language, body in FENCE.findall(section):
        if language == "bash" and "manage.py migrate" in body:
            for line in body.splitlines():
                command = line.partition("#")[0].strip()
                if command:
                    print(command)
            return
    sys.exit(f"no bash block running 'manage.py migrate' under {SECTION!r}")


def pip_args(readme_path: str, wheel: str, index: str) -> None:
    """The ``index``-th ``pip install`` line's arguments, the placeholder path replaced by the
    wheel (its extras kept); exit 3 when the section has no such line."""
    section = install_section(Path(readme_path).read_text())
    lines = [ln.partition("#")[0] for ln in section.splitlines() if ln.startswith("pip install ")]
    if not lines:
        sys.exit(f"no 'pip install' line under {SECTION!r}")
    if int(index) >= len(lines):
        sys.exit(3)
    args = []
    for arg in shlex.split(lines[int(index)])[2:]:
        requirement = re.fullmatch(r"(.+?)(\[[\w,-]+\])?", arg)
        if requirement and requirement.group(1) == PLACEHOLDER:
            args.append(wheel + (requirement.group(2) or ""))
        else:
            args.append(arg)
    if index == "0" and not any(a.startswith(wheel) for a in args):
        sys.exit(f"the README's first pip install line does not install {PLACEHOLDER}: "
                 f"{lines[0]!r}")
    print("\n".join(args))


if __name__ == "__main__":
    command, readme, *rest = sys.argv[1:]
    if command == "apply":
        apply(readme, *rest)
    elif command == "commands":
        commands(readme)
    else:
        pip_args(readme, *rest)
