"""A generation profile (issue 20): a Llama-style decoder with a key/value cache exported by PyTorch's exporter
(bench/export_kv.py: RMSNorm, rotary positions, grouped-query attention; random weights), a prefill then decode
steps feeding present back as past, timed step by step, and the report's section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from splitscope.engine.cli import main
from splitscope.engine.jobs import Progress, Sample

ROOT = Path(__file__).resolve().parents[2]
DECODER = ROOT / "tests" / "data" / "decoder_kv_tiny.onnx"


def test_the_cache_is_fed_back_step_by_step(tmp_path, capsys):
    from splitscope.engine.runtime.generate import generate

    steps = []
    gen = generate(DECODER, "ort-cpu", prompt_len=16, steps=12)
    while True:
        try:
            ev = next(gen)
        except StopIteration as stop:
            res = stop.value
            break
        if isinstance(ev, Sample):
            steps.append(ev.values["cache_tokens"])
        assert isinstance(ev, Progress | Sample)
    assert steps == [17.0 + k for k in range(12)]  # the cache grows by one token a step, after the prefill
    assert len(res.step_ms) == 12 and res.ttft_ms > 0 and res.tpot_ms > 0
    assert res.generations == 3  # timed, after a whole untimed one
    assert res.ttft_range_ms[0] <= res.ttft_ms <= res.ttft_range_ms[1]
    assert res.tpot_range_ms[0] <= res.tpot_ms <= res.tpot_range_ms[1]
    # 2 layers x (key + value) x 2 kv heads x head_dim 8 x 4 bytes = 256 bytes a token; 28 tokens at the end
    assert res.kv_bytes_per_token == 256 and res.kv_bytes_final == 256 * 28
    assert res.per_node["prefill"] and res.per_node["decode"]
    assert res.verdict == "decode not classified" and "bandwidth is not known" in res.why  # no GPU peaks on the CPU


def test_steady_figures_are_medians_across_the_timed_generations():
    """Each step's time is its median across generations, the time per token the median of every timed step, and
    each generation's own median step gives the spread (checked against numbers worked out here)."""
    import statistics

    from splitscope.engine.runtime.generate import Generation, _steady

    timed = [[9.0, 1.0, 2.0, 3.0], [7.0, 1.5, 1.0, 5.0], [8.0, 0.5, 4.0, 2.0]]
    res = Generation("ort-cpu", 4, 3, generations=3)
    _steady(res, timed)
    assert res.ttft_ms == 8.0 and res.ttft_range_ms == [7.0, 9.0]
    assert res.step_ms == [1.0, 2.0, 3.0]
    assert res.tpot_ms == statistics.median([1.0, 2.0, 3.0, 1.5, 1.0, 5.0, 0.5, 4.0, 2.0]) == 2.0
    assert res.tpot_range_ms == [1.5, 2.0]
    assert res.tokens_per_s == 500.0


def test_the_cli_and_the_report(tmp_path, capsys):
    out = tmp_path / "g.json"
    args = ["profile", str(DECODER), "--generate", "8", "--prompt-len", "32", "--generations", "2"]
    assert main([*args, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "time to first token" in text and "tokens/s" in text and "verdict:" in text
    assert "median of 2 timed generations after a warm one" in text
    g = json.loads(out.read_text())["generation"]
    assert g["steps"] == 8 and g["prompt_len"] == 32 and len(g["step_ms"]) == 8
    page = tmp_path / "r.html"
    assert main(["report", str(DECODER), "--parser", "table", "--generation", str(out), "--out", str(page)]) == 0
    assert "Generation: prefill and decode" in page.read_text()
    assert "timed over 2 generations after an untimed one" in page.read_text()


def test_a_model_without_a_cache_is_refused_in_one_line(capsys):
    assert main(["profile", str(ROOT / "tests" / "data" / "torch_transformer.onnx"), "--generate", "4"]) == 2
    err = capsys.readouterr().err
    assert "no key/value cache" in err and len(err.strip().splitlines()) == 1


def test_the_cache_pairs_and_layouts():
    """Keys before values by the name's last part; GPT-2's [2, batch, heads, past, head_dim] cache emptied on its
    past axis, its fixed dims kept; an input named past_sequence_length is not a cache."""
    from types import SimpleNamespace as N

    from splitscope.engine.runtime.generate import _empty_past, cache_pairs

    ins = [
        N(name=n)
        for n in (
            "past_key_values.1.value",
            "past_key_values.0.value",
            "past_key_values.0.key",
            "past_key_values.1.key",
            "past_sequence_length",
        )
    ]
    outs = [N(name=n) for n in ("present.0.key", "present.1.value", "present.0.value", "present.1.key")]
    assert cache_pairs(ins, outs) == [
        ("past_key_values.0.key", "present.0.key"),
        ("past_key_values.0.value", "present.0.value"),
        ("past_key_values.1.key", "present.1.key"),
        ("past_key_values.1.value", "present.1.value"),
    ]
    assert _empty_past([2, "batch", 12, "past_seq", 64]) == [2, 1, 12, 0, 64]
    assert _empty_past(["batch", 4, "past_seq", 8]) == [1, 4, 0, 8]


@pytest.mark.parametrize(
    "bad", [["--generate", "4", "--prompt-len", "0"], ["--generate", "0"], ["--generate", "4", "--generations", "0"]]
)
def test_bad_lengths_are_refused(bad):
    assert main(["profile", str(DECODER), *bad]) == 2
