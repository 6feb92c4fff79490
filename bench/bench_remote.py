"""A profile through an SSH target against the same profile run here, interleaved: what the remote path costs.

The target is OpenSSH on 127.0.0.1 with throwaway keys (tests/remote/sshd.py; ``.ci/sshd`` installs the server), its
Python this one: the difference is the connection, the push (first run only: content-keyed), the serving process and
the streaming of events, not the network.

    python bench/bench_remote.py MODEL [--dim NAME=INT ...] [--iterations 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    from tests.remote import sshd
    from tests.remote.test_remote import _url

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--dim", action="append", default=[])
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    server = sshd.start(Path(tempfile.mkdtemp(prefix="ss-bench-sshd-")))
    server.trust()
    home = tempfile.mkdtemp(prefix="splitscope-remote-bench-")
    env = {**os.environ, "PYTHONPATH": str(ROOT), **{k: home for k in ("XDG_CACHE_HOME", "XDG_DATA_HOME")}}
    base = [
        sys.executable,
        "-m",
        "splitscope.engine.cli",
        "profile",
        args.model,
        "--parser",
        "table",
        "-q",
        "--iterations",
        str(args.iterations),
        *[x for d in args.dim for x in ("--dim", d)],
    ]
    runs: dict[str, list[float]] = {"local": [], "remote": []}
    latency: dict[str, list[float]] = {"local": [], "remote": []}
    try:
        for _ in range(args.repeat):
            for how in ("local", "remote"):
                out = Path(home) / f"{how}.json"
                extra = ["--target", _url(server)] if how == "remote" else []
                t0 = time.perf_counter()
                subprocess.run([*base, *extra, "--json", str(out)], env=env, check=True, capture_output=True)
                runs[how].append(time.perf_counter() - t0)
                latency[how].append(json.loads(out.read_text())["latency_ms"]["p50"])
    finally:
        server.stop()
    loc, rem = statistics.median(runs["local"]), statistics.median(runs["remote"])
    print(
        json.dumps(
            {
                "local_s": round(loc, 2),
                "remote_s": round(rem, 2),
                "remote_over_local": round(rem / loc, 3),
                "p50_ms_local": round(statistics.median(latency["local"]), 4),
                "p50_ms_remote": round(statistics.median(latency["remote"]), 4),
                "runs": runs,
            }
        )
    )


if __name__ == "__main__":
    main()
