"""Export the LLM-scale benchmark models with PyTorch's real ONNX exporters.

Needs ``torch`` (and ``transformers`` for GPT-2); weights are random, nothing is downloaded::

    python bench/export_llms.py OUT_DIR --llama-layers 66 410 1650 --gpt2

- ``llama_ts_<L>.onnx``: a Llama decoder (the module layout of Hugging Face's
  ``LlamaForCausalLM``, written out here) with ``L`` tiny layers (hidden 16, two query heads and
  one key/value head, no cache, tied embeddings), through the TorchScript-based exporter (``dynamo=False``),
  which names nodes by module path and aliases shared weights through ``Identity`` nodes. 1,650
  layers give about 200k nodes, the size the window's LLM target is set at.
- ``gpt2_dynamo_raw.onnx``: a two-layer ``GPT2LMHeadModel`` with its key/value cache through the
  torch.export-based exporter with ``optimize=False``: the raw output, with the sequence ops the
  optimizer would remove.

Each file is written gzip-compressed beside the plain one when ``--gzip`` is given (what the
benchmark machine copies back).
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import time
from pathlib import Path
from typing import Any

import torch


class RMSNorm(torch.nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        var = x.float().pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + 1e-6))


def _rotate(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(torch.nn.Module):
    def __init__(self, dim: int, heads: int, kv_heads: int) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.q_proj = torch.nn.Linear(dim, dim, bias=False)
        self.k_proj = torch.nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.v_proj = torch.nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.o_proj = torch.nn.Linear(dim, dim, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + _rotate(q) * sin
        k = k * cos + _rotate(k) * sin
        rep = self.heads // self.kv_heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        att = torch.matmul(q, k.transpose(2, 3)) / (self.head_dim**0.5) + mask
        out = torch.matmul(torch.softmax(att.float(), dim=-1).to(q.dtype), v)
        return self.o_proj(out.transpose(1, 2).reshape(b, s, -1))


class MLP(torch.nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.gate_proj = torch.nn.Linear(dim, hidden, bias=False)
        self.up_proj = torch.nn.Linear(dim, hidden, bias=False)
        self.down_proj = torch.nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(torch.nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(torch.nn.Module):
    def __init__(self, dim: int, heads: int, kv_heads: int, hidden: int) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(dim)
        self.self_attn = Attention(dim, heads, kv_heads)
        self.post_attention_layernorm = RMSNorm(dim)
        self.mlp = MLP(dim, hidden)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(torch.nn.Module):
    """Llama's decoder (RMSNorm, rotary positions, grouped-query attention, SiLU-gated MLP) with
    the module names of Hugging Face's ``LlamaForCausalLM``, written out so the TorchScript
    exporter takes it whatever the installed ``transformers`` does with its masks."""

    def __init__(
        self, layers: int, vocab: int = 64, dim: int = 16, heads: int = 2, kv_heads: int = 1, hidden: int = 32
    ) -> None:
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(vocab, dim)
        self.layers = torch.nn.ModuleList(DecoderLayer(dim, heads, kv_heads, hidden) for _ in range(layers))
        self.norm = RMSNorm(dim)
        inv = 1.0 / (10000 ** (torch.arange(0, dim // heads, 2).float() / (dim // heads)))
        self.register_buffer("inv_freq", inv, persistent=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        s = ids.shape[1]
        pos = torch.arange(s, device=ids.device).float()
        freqs = torch.outer(pos, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        mask = torch.triu(torch.full((s, s), float("-inf")), diagonal=1)[None, None]
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.norm(x)


class LlamaForCausalLM(torch.nn.Module):
    def __init__(self, layers: int) -> None:
        super().__init__()
        self.model = LlamaModel(layers)
        self.lm_head = torch.nn.Linear(16, 64, bias=False)
        self.lm_head.weight = self.model.embed_tokens.weight  # tied, as small Llamas ship

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.lm_head(self.model(ids))


def llama(layers: int) -> torch.nn.Module:
    return LlamaForCausalLM(layers).eval()


class _Block(torch.nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        nn = torch.nn
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (self.down(x) if self.down is not None else x))


def resnet18() -> torch.nn.Module:
    """ResNet-18 (torchvision's layout, written out), random weights, for the calibration benchmark."""
    nn = torch.nn
    layers: list[nn.Module] = [
        nn.Conv2d(3, 64, 7, 2, 3, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(3, 2, 1),
    ]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [_Block(cin, cout, stride), _Block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    return nn.Sequential(*layers).eval()


def gpt2() -> torch.nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(vocab_size=64, n_embd=16, n_layer=2, n_head=2, n_positions=64)
    return GPT2LMHeadModel(cfg).eval()


class _Logits(torch.nn.Module):
    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.inner(input_ids=ids).logits


def _export(model: torch.nn.Module, ids: torch.Tensor, path: Path, dynamo: bool) -> None:
    with torch.no_grad():
        if dynamo:
            torch.onnx.export(
                model,
                (ids,),
                str(path),
                dynamo=True,
                optimize=False,
                input_names=["input_ids"],
                dynamic_shapes={"input_ids": {1: torch.export.Dim("seq", max=64)}},
            )
        else:
            torch.onnx.export(
                model,
                (ids,),
                str(path),
                dynamo=False,
                opset_version=17,
                input_names=["input_ids"],
                output_names=["logits"],
                dynamic_axes={"input_ids": {1: "seq"}, "logits": {1: "seq"}},
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--llama-layers", type=int, nargs="*", default=[66, 410, 1650])
    ap.add_argument("--gpt2", action="store_true")
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--resnet18", action="store_true", help="also ResNet-18 (for the calibration benchmark)")
    ap.add_argument("--resnet50", action="store_true", help="also torchvision's ResNet-50, random weights (seed 0)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    ids = torch.randint(0, 64, (1, 8))
    jobs: list[tuple[str, torch.nn.Module, bool]] = [("gpt2_dynamo_raw", gpt2(), True)] if args.gpt2 else []
    jobs += [(f"llama_ts_{n}", llama(n), False) for n in args.llama_layers]
    vision: list[tuple[str, Any]] = [("resnet18", resnet18)] if args.resnet18 else []
    if args.resnet50:
        from torchvision.models import resnet50

        vision.append(("resnet50", lambda: resnet50(weights=None).eval()))
    for name, make in vision:
        torch.manual_seed(0)
        path = args.out / f"{name}.onnx"
        torch.onnx.export(
            make(),
            (torch.randn(1, 3, 224, 224),),
            str(path),
            dynamo=False,
            opset_version=17,
            input_names=["x"],
            output_names=["y"],
        )
        print(f"{name}: {path}", flush=True)
    for name, model, dynamo in jobs:
        path = args.out / f"{name}.onnx"
        t0 = time.perf_counter()
        try:
            _export(model, ids, path, dynamo)
        except Exception as exc:  # noqa: BLE001 - keep the other models when one exporter fails
            print(f"{name}: export failed: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}", flush=True)
            continue
        import onnx

        nodes = len(onnx.load(str(path), load_external_data=False).graph.node)
        print(f"{name}: {nodes} nodes, {path.stat().st_size} bytes, {time.perf_counter() - t0:.1f} s", flush=True)
        if args.gzip:
            with path.open("rb") as src, gzip.open(f"{path}.gz", "wb", compresslevel=9) as dst:
                shutil.copyfileobj(src, dst)


if __name__ == "__main__":
    main()
