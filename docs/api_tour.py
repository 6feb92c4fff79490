"""A notebook's worth of the Python API, as cells: analyse two models, profile one, calibrate it to INT8 and to
FP16 on real photos, and compare, through ``import splitscope`` alone. Each ``# %%`` is a cell (Jupyter, VS Code
and Spyder run them one at a time); run whole, it prints each cell's result.

    python docs/api_tour.py MODEL_A MODEL_B PHOTOS/ [--dims-a h=320,w=320] [--dims-b ...] [--recipe RECIPE]

The acceptance suite runs it on YOLOv8n (nudenet) and PP-OCRv4's text detector (rapidocr) with scikit-image's
photos. pandas makes the tables nicer (``pip install 'splitscope[api]'``); without it they print as lists.
"""

# %% The two models and the photos, from the command line
import argparse
import tempfile
from pathlib import Path

import splitscope


def dims_of(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in (kv.split("=") for kv in text.split(",") if kv)}


ap = argparse.ArgumentParser()
ap.add_argument("model_a")
ap.add_argument("model_b")
ap.add_argument("photos")
ap.add_argument("--dims-a", type=dims_of, default={})
ap.add_argument("--dims-b", type=dims_of, default={})
ap.add_argument("--recipe", default="preset=letterbox")
ap.add_argument("--samples", type=int, default=4)
args = ap.parse_args()
out = Path(tempfile.mkdtemp(prefix="splitscope-tour-"))

# %% Analyse both: the split, FLOPs and partitions at the shapes in force
a = splitscope.analyze(args.model_a, dims=args.dims_a, parser="table")
b = splitscope.analyze(args.model_b, dims=args.dims_b, parser="table")
for name, result in (("A", a), ("B", b)):
    print(name, result.headline)
    print("  ", f"{result.flops / 1e9:.2f} GFLOPs")


# %% Which ops carry the FLOPs, per model (a DataFrame with pandas, else rows)
def top_ops(result, n: int = 5) -> list[tuple[str, int]]:
    totals: dict[str, int] = {}
    for row in result.to_json()["node_status"]:
        totals[row["op_type"]] = totals.get(row["op_type"], 0) + int(row.get("flops") or 0)
    return sorted(totals.items(), key=lambda kv: -kv[1])[:n]


print("A", top_ops(a))
print("B", top_ops(b))

# %% Profile model A on this machine: latency, the top nodes, the verdict
p = splitscope.profile(args.model_a, dims=args.dims_a, iterations=20, warmup=3, profiled=3)
print(f"p50 {p.latency_ms['p50']:.2f} ms, verdict: {p.verdict['verdict']}")
for node in sorted(p.per_node, key=lambda n: -n["ms"])[:5]:
    print(f"  {node['name']:<40} {node['ms']:.3f} ms  {node['share']:.1%}")

# %% Calibrate model A on the photos, INT8 and FP16, each written model run to measure its accuracy
int8 = splitscope.calibrate(
    args.model_a, out / "a.int8.onnx", data=args.photos, recipe=args.recipe, samples=args.samples
)
fp16 = splitscope.calibrate(
    args.model_a, out / "a.fp16.onnx", data=args.photos, recipe=args.recipe, samples=args.samples, precision="fp16"
)

# %% Compare: each output's SNR against FP32, INT8 beside FP16
for output in int8.accuracy:
    print(f"{output}: INT8 {int8.accuracy[output].snr_db:.2f} dB, FP16 {fp16.accuracy[output].snr_db:.2f} dB")
print("quantized nodes:", int8.quantized_nodes, "| FP16 casts:", fp16.casts)
print("written:", int8.out, fp16.out)
