"""Time per token against a bare loop in steady state: ``profile --generate`` (its warm generation, then medians of
its timed ones) against a plain ONNX Runtime loop written here, apart from our code: the same decoder, the same
session settings (every optimisation on), the cache bound on the device, one whole untimed generation, then
``--timed`` generations, each step timed on the host; interleaved bare, ours, bare, ours.

    python bench/export_kv.py /tmp/decoder_kv.onnx --layers 8 --hidden 512 --heads 8 --kv-heads 4 --vocab 8192
    PYTHONPATH=. python bench/gpu_generate_steady.py /tmp/decoder_kv.onnx --out OUT [--backend ort-cuda]

Writes ``OUT/generate_steady.json``; one line of JSON per run on stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np


def _ort():  # type: ignore[no-untyped-def]
    import onnxruntime as ort

    if hasattr(ort, "preload_dlls"):
        ort.preload_dlls()
    return ort


def bare(path: Path, backend: str, prompt_len: int, steps: int, timed: int) -> dict[str, object]:
    """The plain loop: prefill then ``steps`` decode steps, the present fed back as the past on the device."""
    ort = _ort()
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    cuda = backend == "ort-cuda"
    providers = ["CUDAExecutionProvider", "CPUExecutionProvider"] if cuda else ["CPUExecutionProvider"]
    sess = ort.InferenceSession(str(path), so, providers=providers)
    ins = {i.name: i for i in sess.get_inputs()}
    past_names = sorted(n for n in ins if n.startswith("past_key_values."))
    present = [n.replace("past_key_values.", "present.") for n in past_names]
    outs = ["logits", *present]
    vocab = sess.get_outputs()[0].shape[-1]
    prompt = np.random.default_rng(1).integers(0, vocab, (1, prompt_len), dtype=np.int64)

    def empty() -> dict[str, object]:
        got = {}
        for n in past_names:
            shape = [1 if k == 0 else 0 if k == 2 else int(d) for k, d in enumerate(ins[n].shape)]
            a = np.zeros(shape, np.float32)
            got[n] = ort.OrtValue.ortvalue_from_numpy(a, "cuda", 0) if cuda else a
        return got

    def one() -> list[float]:
        past, tokens, total, ms = empty(), prompt, 0, []
        for _ in range(steps + 1):
            n = tokens.shape[1]
            feeds = {
                "input_ids": tokens,
                "attention_mask": np.ones((1, total + n), np.int64),
                "position_ids": np.arange(total, total + n, dtype=np.int64)[None],
            }
            t0 = time.perf_counter()
            if cuda:
                io = sess.io_binding()
                for k, v in feeds.items():
                    io.bind_cpu_input(k, v)
                for k, v in past.items():
                    io.bind_ortvalue_input(k, v)
                for o in outs:
                    io.bind_output(o, "cuda", 0)
                sess.run_with_iobinding(io)
                io.synchronize_outputs()
                got = io.get_outputs()
                logits = got[0].numpy()
            else:
                got = sess.run(outs, {**feeds, **past})
                logits = got[0]
            ms.append(1e3 * (time.perf_counter() - t0))
            past = dict(zip(past_names, got[1:], strict=True))
            total += n
            tokens = logits[:, -1:, :].argmax(-1).astype(np.int64)
        return ms

    cold = one()  # the whole untimed generation: a fresh session's first
    runs = [one() for _ in range(timed)]
    steps_all = [x for r in runs for x in r[1:]]
    return {
        "ttft_ms": statistics.median(r[0] for r in runs),
        "tpot_ms": statistics.median(steps_all),
        "tpot_range_ms": [min(statistics.median(r[1:]) for r in runs), max(statistics.median(r[1:]) for r in runs)],
        "cold_generation_tpot_ms": statistics.median(cold[1:]),
    }


def ours(path: Path, backend: str, prompt_len: int, steps: int, timed: int) -> dict[str, object]:
    from splitscope.engine.jobs import run_to_end
    from splitscope.engine.runtime.generate import generate

    g = run_to_end(generate(path, backend, prompt_len, steps, generations=timed)).to_json()
    return {k: g[k] for k in ("ttft_ms", "tpot_ms", "ttft_range_ms", "tpot_range_ms", "generations")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--backend", default="ort-cuda")
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--timed", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    rows = []
    for r in range(args.rounds):
        for who, fn in (("bare", bare), ("ours", ours)):
            t0 = time.perf_counter()
            row = {"round": r, "who": who, **fn(args.model, args.backend, args.prompt_len, args.steps, args.timed)}
            row["wall_s"] = round(time.perf_counter() - t0, 2)
            rows.append(row)
            print(json.dumps(row), flush=True)
    b = [x for x in rows if x["who"] == "bare"]
    o = [x for x in rows if x["who"] == "ours"]
    summary = {
        "tpot_ours_over_bare": [round(x["tpot_ms"] / y["tpot_ms"], 3) for x, y in zip(o, b, strict=True)],
        "ttft_ours_over_bare": [round(x["ttft_ms"] / y["ttft_ms"], 3) for x, y in zip(o, b, strict=True)],
        "bare_cold_generation_over_steady": [round(y["cold_generation_tpot_ms"] / y["tpot_ms"], 3) for y in b],
    }
    print(json.dumps(summary), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "generate_steady.json").write_text(json.dumps({"runs": rows, "summary": summary}, indent=1))


if __name__ == "__main__":
    main()
