"""Per-node device times by CUPTI on a GPU (BENCHMARKS.md): ResNet-50 and ViT-B/16 (torchvision, random weights,
PyTorch's exporter, batch 8) profiled twice each with ONNX Runtime CUDA, against the host times of the same runs
(the previous method): how much of a profiled run the nodes' times cover, and how stable the top-10 is.

Usage, on a machine with PyTorch, torchvision, onnxruntime-gpu and cupti-python: python bench/gpu_cupti.py OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import torchvision
from splitscope.engine.jobs import run_to_end
from splitscope.engine.runtime import cupti_times
from splitscope.engine.runtime.profile import profile
from splitscope.engine.split.analyze import analyze_model

CUPTI_AVAILABLE = cupti_times.available
torch.backends.mha.set_fastpath_enabled(False)  # the exporter cannot write the fused attention
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
rows = {}
for name, net in (("resnet50", torchvision.models.resnet50), ("vit_b_16", torchvision.models.vit_b_16)):
    path = Path(f"/tmp/{name}.onnx")
    with torch.no_grad():
        torch.onnx.export(
            net(weights=None).eval(),
            (torch.randn(8, 3, 224, 224),),
            str(path),
            dynamo=False,
            opset_version=17,
            input_names=["x"],
        )
    gm = analyze_model(path, parser="table")
    for source in ("device", "host"):
        cupti_times.available = (  # type: ignore[assignment] - read by name at each profile
            (lambda: "switched off for the comparison") if source == "host" else CUPTI_AVAILABLE
        )
        runs = []
        for _ in range(2):
            res = run_to_end(profile(path, gm, backend="ort-cuda", iterations=50, warmup=10, profiled=20)).to_json()
            runs.append(res)
        tops = [[r["name"] for r in res["per_node"][:10]] for res in runs]
        ms = [{r["name"]: r["ms"] for r in res["per_node"]} for res in runs]
        spread = max(abs(ms[0][k] - ms[1].get(k, 0)) / ms[0][k] for k in tops[0] if ms[0][k])
        rows[f"{name}/{source}"] = {
            "node_times": runs[0]["node_times"],
            "latency_ms": runs[0]["latency_ms"]["p50"],
            "node_cover": [r["node_cover"] for r in runs],
            "profiled_run_ms": [r["profiled_run_ms"] for r in runs],
            "top10_same_set": len(set(tops[0]) & set(tops[1])),
            "top10_same_order": sum(a == b for a, b in zip(tops[0], tops[1], strict=True)),
            "top10_max_rel_spread": round(spread, 4),
            "note": next((n for n in runs[0]["notes"] if n.startswith("per-node times are")), ""),
            "cuda_graph_ms": (runs[0].get("cuda_graph_ms") or {}).get("p50"),
            "graph_note": next((n for n in runs[0]["notes"] if "CUDA graph" in n), ""),
            "rows_not_model_nodes": sum(1 for r in runs[0]["per_node"] if r["index"] is None),
            "rows": len(runs[0]["per_node"]),
            "level_note": next((n for n in runs[0]["notes"] if n.startswith("per-node times come")), ""),
        }
        print(name, source, json.dumps(rows[f"{name}/{source}"]), flush=True)
(out / "cupti.json").write_text(json.dumps(rows, indent=1))
