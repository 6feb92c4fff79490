"""Export a Llama-style decoder with a key/value cache through PyTorch's TorchScript-based ONNX exporter, the way
decoder exports for ONNX Runtime GenAI and Optimum name it: inputs ``input_ids``, ``attention_mask``,
``position_ids`` and ``past_key_values.{i}.key`` / ``.value`` ([batch, kv_heads, past_sequence_length,
head_dim]); outputs ``logits`` and ``present.{i}.key`` / ``.value``. RMSNorm, rotary positions, grouped
query attention, SwiGLU MLP; random weights.

    python bench/export_kv.py OUT.onnx [--layers 2] [--hidden 32] [--heads 4] [--kv-heads 2] [--vocab 128]
"""

from __future__ import annotations

import argparse

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


def rotate(x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    freq = 1.0 / (10000 ** (torch.arange(half, dtype=torch.float32) / half))
    ang = pos[:, None, :, None].float() * freq  # [b, 1, s, half]
    cos, sin = ang.cos(), ang.sin()
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], -1)


class Layer(nn.Module):
    def __init__(self, d: int, heads: int, kv_heads: int) -> None:
        super().__init__()
        self.heads, self.kv, self.hd = heads, kv_heads, d // heads
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(d), RMSNorm(d)
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)
        self.gate_proj, self.up_proj = nn.Linear(d, 4 * d, bias=False), nn.Linear(d, 4 * d, bias=False)
        self.down_proj = nn.Linear(4 * d, d, bias=False)

    def forward(self, x, pos, mask, pk, pv):
        b, s, _ = x.shape
        h = self.input_layernorm(x)
        q = rotate(self.q_proj(h).view(b, s, self.heads, self.hd).transpose(1, 2), pos)
        k = rotate(self.k_proj(h).view(b, s, self.kv, self.hd).transpose(1, 2), pos)
        v = self.v_proj(h).view(b, s, self.kv, self.hd).transpose(1, 2)
        k, v = torch.cat([pk, k], 2), torch.cat([pv, v], 2)  # the cache grows by s
        rep = self.heads // self.kv
        kk, vv = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        att = q @ kk.transpose(-1, -2) / self.hd**0.5
        total = k.shape[2]
        causal = torch.ones(s, total, dtype=torch.bool).tril(total - s)
        keep = causal[None, None] & mask[:, None, None, :].bool()
        att = att.masked_fill(~keep, -1e9).softmax(-1)
        y = (att @ vv).transpose(1, 2).reshape(b, s, -1)
        x = x + self.o_proj(y)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(nn.functional.silu(self.gate_proj(h)) * self.up_proj(h)), k, v


class Decoder(nn.Module):
    def __init__(self, layers: int, d: int, heads: int, kv_heads: int, vocab: int) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(Layer(d, heads, kv_heads) for _ in range(layers))
        self.norm = RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, input_ids, attention_mask, position_ids, *past):
        x = self.embed_tokens(input_ids)
        present = []
        for i, layer in enumerate(self.layers):
            x, k, v = layer(x, position_ids, attention_mask, past[2 * i], past[2 * i + 1])
            present += [k, v]
        return (self.lm_head(self.norm(x)), *present)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=128)
    a = ap.parse_args()
    torch.manual_seed(0)
    m = Decoder(a.layers, a.hidden, a.heads, a.kv_heads, a.vocab).eval()
    hd = a.hidden // a.heads
    s, p = 3, 5
    past = []
    names_in, names_out, axes = ["input_ids", "attention_mask", "position_ids"], ["logits"], {}
    axes.update(
        input_ids={0: "batch", 1: "sequence_length"},
        attention_mask={0: "batch", 1: "total_sequence_length"},
        position_ids={0: "batch", 1: "sequence_length"},
        logits={0: "batch", 1: "sequence_length"},
    )
    for i in range(a.layers):
        for kind in ("key", "value"):
            past.append(torch.randn(1, a.kv_heads, p, hd))
            names_in.append(f"past_key_values.{i}.{kind}")
            names_out.append(f"present.{i}.{kind}")
            axes[names_in[-1]] = {0: "batch", 2: "past_sequence_length"}
            axes[names_out[-1]] = {0: "batch", 2: "total_sequence_length"}
    ids = torch.randint(0, a.vocab, (1, s))
    args = (ids, torch.ones(1, p + s, dtype=torch.int64), torch.arange(p, p + s)[None], *past)
    with torch.no_grad():
        torch.onnx.export(
            m,
            args,
            a.out,
            dynamo=False,
            opset_version=17,
            input_names=names_in,
            output_names=names_out,
            dynamic_axes=axes,
        )
    print("exported", a.out)


if __name__ == "__main__":
    main()
