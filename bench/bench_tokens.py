"""Pause tokens per second: ``mint_token`` + ``verify_token`` against PyJWT HS256.

One command, no services: ``.venv/bin/python bench/bench_tokens.py``.

Both sides sign and verify the same claim set (a realistic ``PauseClaims``:
uuids, 64-hex hashes, ids, a 24 h expiry) with HMAC-SHA256 under the same
``SECRET_KEY``; PyJWT encodes it as a JSON object (``jwt.encode``) and
verifies signature and ``exp`` (``jwt.decode``). Rounds of baseline and
subject alternate and the medians are compared, because this machine is
noisy: absolute numbers drift, the ratio is what counts.

Goal: ours / PyJWT >= 1.0. Exits 0 either way and prints PASS or FAIL.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

import jwt  # noqa: E402
from django.conf import settings  # noqa: E402

from symfonic_django.tokens import (  # noqa: E402
    PauseClaims,
    mint_token,
    pin_hash,
    scope_hash,
    verify_token,
)

GOAL = 1.0


def realistic_claims() -> PauseClaims:
    now = int(time.time())
    run_id = str(uuid.uuid4())
    return PauseClaims(
        jti=str(uuid.uuid4()), run_id=run_id, root_run_id=str(uuid.uuid4()),
        scope_hash=scope_hash("acme"), session_id="sess-7f3a9c21", thread_id="thread-42",
        checkpoint_id="1ef4c2a0-8d7b-6c1e-8001-3b9d2f6e5a10", pin_hash=pin_hash({"order": 1234}),
        kind="approval", iat=now, exp=now + 24 * 3600,
    )


def ops_per_second(fn: Callable[[], object], seconds: float) -> float:
    """Call ``fn`` in batches until ``seconds`` have passed; return calls per second."""
    batch, done = 200, 0
    start = time.perf_counter()
    while True:
        for _ in range(batch):
            fn()
        done += batch
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="rounds per side (default 9)")
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one round")
    parser.add_argument("--quick", action="store_true",
                        help="one round of 0.05 s: proves the benchmark runs to its end (make test runs it); its figures mean nothing")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.seconds = 1, 0.05

    claims = realistic_claims()
    as_dict = claims.as_dict()
    key = settings.SECRET_KEY

    # Both sides must round-trip before anything is timed.
    assert verify_token(mint_token(claims)) == claims
    assert jwt.decode(jwt.encode(as_dict, key, algorithm="HS256"), key,
                      algorithms=["HS256"]) == as_dict

    def ours() -> None:
        verify_token(mint_token(claims))

    def pyjwt() -> None:
        jwt.decode(jwt.encode(as_dict, key, algorithm="HS256"), key, algorithms=["HS256"])

    token, jwt_token = mint_token(claims), jwt.encode(as_dict, key, algorithm="HS256")
    sides = {"PyJWT HS256 encode+decode (baseline)": pyjwt, "symfonic mint+verify": ours}
    results: dict[str, list[float]] = {name: [] for name in sides}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyJWT's key-length advice is not measured here
        for fn in sides.values():  # warm-up, discarded
            ops_per_second(fn, 0.2)
        for i in range(args.rounds):
            order = list(sides.items()) if i % 2 == 0 else list(reversed(sides.items()))
            for name, fn in order:
                results[name].append(ops_per_second(fn, args.seconds))

    base_name, ours_name = list(sides)
    base, mine = statistics.median(results[base_name]), statistics.median(results[ours_name])
    ratio = mine / base
    print(f"Pause tokens: {args.rounds} alternating rounds of {args.seconds:g} s per side, "
          f"Python {sys.version.split()[0]}, Django {django.get_version()}, "
          f"PyJWT {jwt.__version__}\n")
    print("| implementation | round-trips/s (median) | min | max | token bytes |")
    print("|---|---:|---:|---:|---:|")
    for name, size in ((base_name, len(jwt_token)), (ours_name, len(token))):
        values = results[name]
        print(f"| {name} | {statistics.median(values):,.0f} | {min(values):,.0f} | "
              f"{max(values):,.0f} | {size} |")
    verdict = "PASS" if ratio >= GOAL else "FAIL"
    print(f"\nratio (ours / PyJWT) = {ratio:.2f}  goal >= {GOAL:.1f}  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
