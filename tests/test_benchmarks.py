"""Every benchmark in ``bench/`` runs to its end in its ``--quick`` mode.

A benchmark nobody runs rots (two of them crashed on main before this test:
a TRUNCATE that new foreign keys refused, a template that linked to a page the
stock admin lacks). Each quick run uses tiny sizes and one round, so only a
crash fails here: a ratio that misses its goal prints FAIL and still exits 0.
The full runs are ``make bench``. They create their own databases and Celery
workers on PostgreSQL and Redis, so they run on the leg with real processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = sorted(path.name for path in (ROOT / "bench").glob("bench_*.py"))

pytestmark = [pytest.mark.postgres, pytest.mark.services]


def test_every_benchmark_is_run_here() -> None:
    assert BENCHMARKS == ["bench_checkpoint.py", "bench_continuations.py",
                          "bench_pause_list.py", "bench_scale.py", "bench_tokens.py",
                          "bench_ws_fanout.py", "bench_ws_latency.py"]


@pytest.mark.parametrize("script", BENCHMARKS)
def test_benchmark_runs_to_its_end_in_quick_mode(script: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL",
                        "DJANGO_SETTINGS_MODULE")}
    done = subprocess.run([sys.executable, f"bench/{script}", "--quick"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    (tmp_path / "output.txt").write_text(done.stdout + done.stderr)
    assert done.returncode == 0, f"{script} --quick exited {done.returncode}:\n" \
                                 f"{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    verdicts = [line for line in done.stdout.splitlines()
                if "PASS" in line or "FAIL" in line or "goal" in line]
    assert verdicts, f"{script} --quick printed no verdict:\n{done.stdout[-3000:]}"
