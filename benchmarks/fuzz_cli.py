"""A larger fuzz run of `rightsize plan` over generated specs (issue #15); not part of CI.

    PYTHONPATH=src python benchmarks/fuzz_cli.py --count 3000 --seed 1 --timeout 60

Each spec is an example with adversarial mutations (tests/spec_fuzz.py). Each runs in this
process under an alarm (a hang is a finding); every traceback, exit code outside {0, 1, 2},
message-less failure or non-finite number in the JSON output is printed with its seed, and the
failing specs are kept under --keep. Prints totals at the end.
"""

from __future__ import annotations

import argparse
import collections
import random
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from spec_fuzz import check_run, mutated_spec, schema_paths, write_spec  # noqa: E402


class _Hang(Exception):
    pass


def _alarm(_signum: int, _frame: object) -> None:
    raise _Hang()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start", type=int, default=0, help="first spec index (to continue a run)")
    p.add_argument("--timeout", type=int, default=60, help="seconds per spec before it counts as a hang")
    p.add_argument("--keep", default="fuzz-failures", help="folder for the failing specs")
    args = p.parse_args()
    paths = schema_paths()
    keep = Path(args.keep)
    codes: collections.Counter[int] = collections.Counter()
    problems: list[tuple[int, str]] = []
    signal.signal(signal.SIGALRM, _alarm)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.start, args.start + args.count):
            seed = args.seed * 1_000_003 + i
            spec = mutated_spec(random.Random(seed), paths)
            path = write_spec(spec, Path(tmp) / "spec.yaml")
            signal.alarm(args.timeout)
            t0 = time.perf_counter()
            try:
                code, problem = check_run(["plan", str(path), "--format", "json"])
            except _Hang:
                code, problem = -1, f"hang: no answer within {args.timeout} s"
            finally:
                signal.alarm(0)
            codes[code] += 1
            if problem:
                problems.append((seed, problem))
                keep.mkdir(exist_ok=True)
                write_spec(spec, keep / f"seed-{seed}.yaml")
                print(f"seed {seed} ({time.perf_counter() - t0:.1f} s): {problem}", flush=True)
            if (i + 1) % 100 == 0:
                print(
                    f"{i + 1 - args.start} specs, {len(problems)} problems, {time.perf_counter() - started:.0f} s",
                    flush=True,
                )
    print(f"specs: {args.count}  exit codes: {dict(sorted(codes.items()))}  problems: {len(problems)}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
