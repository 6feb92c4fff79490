"""``splitscope profile --generate N --prompt-len L``: the generation profile of a decoder with a key/value cache
(:mod:`splitscope.engine.runtime.generate`), printed and written as JSON (``generation``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from splitscope.engine.cli.analyze import _run_with_bar


def profile_generation(args: argparse.Namespace) -> int:
    from splitscope.engine.report.files import write_text_atomic
    from splitscope.engine.runtime.generate import generate
    from splitscope.engine.sample import SAMPLE_MODEL

    model = Path(args.model or SAMPLE_MODEL)
    job = generate(model, args.backend, args.prompt_len, args.generate, generations=args.generations)
    doc = _run_with_bar(job).document(model)
    g = doc["generation"]
    if not args.quiet:
        print(f"{model}: {args.backend}, prefill of {g['prompt_len']} tokens, then {g['steps']} decode steps")
        (t0, t1), (p0, p1) = g["ttft_range_ms"], g["tpot_range_ms"]
        print(
            f"  median of {g['generations']} timed generations after a warm one: time to first token "
            f"{g['ttft_ms']:.3f} ms ({t0:.3f}-{t1:.3f}); per output token {g['tpot_ms']:.3f} ms ({p0:.3f}-{p1:.3f}), "
            f"{g['tokens_per_s']:.1f} tokens/s; steps {min(g['step_ms']):.3f}-{max(g['step_ms']):.3f} ms"
        )
        print(f"  KV cache {g['kv_bytes_per_token']:,} bytes a token, {g['kv_bytes_final'] / 1e6:.2f} MB at the end")
        for phase in ("prefill", "decode"):
            top = ", ".join(f"{r['name']} {r['ms']:.4f} ms" for r in g["per_node"][phase][:3])
            print(f"  {phase}: {top}")
        print(f"  verdict: {g['verdict']}: {g['why']}")
        print(f"  fix: {g['fix']}")
    if args.json:
        write_text_atomic(args.json, json.dumps(doc, indent=1))
        if not args.quiet:
            print(f"wrote {args.json}")
    return 0
