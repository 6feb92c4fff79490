"""A long fuzz campaign over the CLI's bad-input contract (the suite's test_fuzz.py, run for longer).

    python bench/fuzz_campaign.py [--cases 5000] [--seed 1] [--parser table|rtx] [--out bench/out/fuzz.json]

Mutates real models (tests/engine/mutate.py) at the byte and protobuf level and checks each case:
exit 0 with a JSON document, or exit 2 with one stderr line and no traceback, within the time bound,
leaving no partial file. Prints counts by outcome and the slowest cases; any contract break is
listed with its mutation and the case is kept under bench/out/fuzz-failures/.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.engine.mutate import mutate, seed_models  # noqa: E402
from tests.engine.test_fuzz import check_contract, run_case  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--parser", default="table", choices=["table", "rtx"])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "fuzz.json")
    ap.add_argument(
        "--memory-gb",
        type=float,
        default=6.0,
        help="address-space limit: a case that needs more is a break of the contract, not an OOM kill",
    )
    args = ap.parse_args()
    import resource

    limit = int(args.memory_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    rng = random.Random(args.seed)
    seeds = [p.read_bytes() for p in seed_models()]
    outcomes: Counter[str] = Counter()
    messages: Counter[str] = Counter()
    failures: list[dict[str, str]] = []
    slow: list[tuple[float, str]] = []
    fail_dir = ROOT / "bench" / "out" / "fuzz-failures"
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.cases):
            case = mutate(rng, rng.choice(seeds))
            d = Path(tmp) / f"c{k}"
            print(k, case.what, file=sys.stderr, flush=True)
            try:
                rc, err, seconds = run_case(d, case, args.parser)
                check_contract(d, case, rc, err, seconds)
            except BaseException as e:  # noqa: BLE001 - every break of the contract is recorded
                outcomes["broken"] += 1
                failures.append({"case": k, "what": case.what, "error": f"{type(e).__name__}: {str(e)[:400]}"})
                fail_dir.mkdir(parents=True, exist_ok=True)
                (fail_dir / f"case{k}.onnx").write_bytes(case.data)
                continue
            outcomes["ok" if rc == 0 else "rejected"] += 1
            if rc == 0:
                doc = json.loads((d / "out.json").read_text())
                notes = doc["parser"]["notes"]
                if any(n.startswith("unproven: all") for n in notes):
                    outcomes["ok, parser crashed, table answered"] += 1
                elif any("crashed" in n for n in notes):
                    outcomes["ok, parser crashed once, second call answered"] += 1
                if doc["unproven"]["count"]:
                    outcomes["ok, with unproven nodes"] += 1
            if seconds > 2.0:  # not a break, but worth a look: keep it
                fail_dir.mkdir(parents=True, exist_ok=True)
                (fail_dir / f"slow{k}.onnx").write_bytes(case.data)
            if rc == 2:
                first = err.strip().splitlines()[-1].split(":")[1][:60] if ":" in err else err[:60]
                messages[first.strip()] += 1
            slow.append((seconds, case.what))
    total = time.perf_counter() - t0
    slow.sort(reverse=True)
    doc = {
        "cases": args.cases,
        "seed": args.seed,
        "parser": args.parser,
        "seconds": round(total, 1),
        "outcomes": dict(outcomes),
        "slowest": [[round(s, 2), w] for s, w in slow[:5]],
        "top_messages": messages.most_common(12),
        "failures": failures,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1))
    print(json.dumps({k: v for k, v in doc.items() if k != "failures"}, indent=1))
    for f in failures[:20]:
        print("BROKEN", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
