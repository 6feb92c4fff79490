"""``splitscope profile --generate N --prompt-len L``: the generation profile of a decoder with a key/value cache
(:mod:`splitscope.engine.runtime.generate`), printed and written as JSON (``generation``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from splitscope.engine.cli_analyze import _run_with_bar


def profile_generation(args: argparse.Namespace) -> int:
    from splitscope.engine.report.files import write_text_atomic
    from splitscope.engine.runtime.generate import generate
    from splitscope.engine.sample import SAMPLE_MODEL

    model = Path(args.model or SAMPLE_MODEL)
    g = _run_with_bar(generate(model, args.backend, args.prompt_len, args.generate)).to_json()
    doc = {"model": str(model), "backend": args.backend, "generation": g}
    if not args.quiet:
        print(f"{model}: {args.backend}, prefill of {g['prompt_len']} tokens, then {g['steps']} decode steps")
        print(
            f"  time to first token {g['ttft_ms']:.3f} ms; per output token {g['tpot_ms']:.3f} ms (median), "
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
