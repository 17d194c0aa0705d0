"""What the built distributions hold: the app with its templates, static files, migrations and
compiled translations, and nothing else (no ``example_project``, no tests).

    python check_wheel.py DIST_DIR    # prints a summary; exits non-zero naming what is wrong
"""

from __future__ import annotations

import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

PACKAGE = "symfonic_django"
#: One file of each kind that must ship for the app to work in a project.
REQUIRED = [
    f"{PACKAGE}/py.typed",
    f"{PACKAGE}/migrations/0001_initial.py",
    f"{PACKAGE}/static/symfonic_django/admin.css",
    f"{PACKAGE}/templates/symfonic_django/viewer.html",
    # The French catalogs, compiled: a project with LANGUAGES including fr gets them.
    f"{PACKAGE}/locale/fr/LC_MESSAGES/django.mo",
    f"{PACKAGE}/locale/fr/LC_MESSAGES/djangojs.mo",
]


def main(dist: Path) -> list[str]:
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        return [f"expected one wheel and one sdist in {dist}, found {wheels + sdists}"]
    problems = []
    with zipfile.ZipFile(wheels[0]) as wheel:
        names = wheel.namelist()
        metadata_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(wheel.read(metadata_name).decode())
    top = sorted({name.split("/", 1)[0] for name in names})
    strangers = [t for t in top if t != PACKAGE and not t.endswith(".dist-info")]
    if strangers:
        problems.append(f"the wheel ships more than the app: {strangers}")
    problems += [f"the wheel lacks {path}" for path in REQUIRED if path not in names]
    if metadata.get("License-Expression") != "MIT":
        problems.append(f"License-Expression is {metadata.get('License-Expression')!r}, not 'MIT'")
    with tarfile.open(sdists[0]) as sdist:
        sdist_names = sdist.getnames()
    if any("/example_project/" in name for name in sdist_names):
        problems.append("the sdist ships example_project")

    def count(part: str) -> int:
        return sum(1 for n in names if n.startswith(f"{PACKAGE}/{part}/") and not n.endswith("/"))

    print(f"  wheel {wheels[0].name}: {len(names)} files, {wheels[0].stat().st_size} bytes; "
          f"top level {top}")
    print(f"  {count('templates')} templates, {count('static')} static files, "
          f"{count('migrations')} migration modules; sdist {len(sdist_names)} entries; "
          f"License-Expression {metadata.get('License-Expression')}")
    return problems


if __name__ == "__main__":
    found = main(Path(sys.argv[1]))
    for problem in found:
        print(f"  {problem}")
    sys.exit(1 if found else 0)
