"""Fuzz the CLI's contract with seeded mutations of real models (tests/engine/mutate.py).

The contract for any input file: exit 0 with a JSON document, or exit 2 with one line on stderr
(``splitscope: ...``) and no traceback; within a time bound; and no partial output file. The table
run is in process (hundreds of cases in about a minute); a smaller set goes through the real
TensorRT-RTX parser in its child process. bench/fuzz_campaign.py runs the long campaign.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import time

import pytest
from splitscope.engine import cli

from tests.engine.conftest import needs_rtx
from tests.engine.mutate import mutate, seed_models

CASE_SECONDS = 30.0


def run_case(tmp, case, parser: str) -> tuple[int, str, float]:
    """Write the case (and its side files) under ``tmp``, run ``splitscope analyze`` on it in process."""
    tmp.mkdir(parents=True, exist_ok=True)
    model = tmp / "case.onnx"
    model.write_bytes(case.data)
    for name, data in case.side.items():
        (tmp / name).write_bytes(data)
    out = tmp / "out.json"
    err = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = cli.main(["analyze", str(model), "--parser", parser, "-q", "--json", str(out)])
    return rc, err.getvalue(), time.perf_counter() - t0


def check_contract(tmp, case, rc: int, err: str, seconds: float) -> None:
    out = tmp / "out.json"
    label = f"[{case.what}]"
    assert seconds < CASE_SECONDS, f"{label} took {seconds:.1f} s"
    assert "Traceback" not in err, f"{label} {err}"
    if rc == 0:
        doc = json.loads(out.read_text())
        assert doc["schema"] == "splitscope-analysis", label
    else:
        assert rc == 2, f"{label} exit {rc}: {err}"
        lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("warning: ")]
        assert len(lines) == 1 and lines[0].startswith("splitscope: "), f"{label} {err!r}"
        assert not out.exists(), f"{label} left a partial output file"
    assert not [p.name for p in tmp.iterdir() if p.name.endswith(".tmp")], f"{label} left a temporary file"


@pytest.mark.slow
def test_fuzz_table_contract(tmp_path):
    rng = random.Random(20261201)
    seeds = [p.read_bytes() for p in seed_models()]
    deadline = time.monotonic() + 45
    cases = 0
    while cases < 3000 and time.monotonic() < deadline:
        case = mutate(rng, rng.choice(seeds))
        d = tmp_path / f"c{cases}"
        try:
            rc, err, seconds = run_case(d, case, "table")
        except BaseException as e:  # the contract: nothing escapes the CLI
            raise AssertionError(f"[{case.what}] raised {type(e).__name__}: {e}") from e
        check_contract(d, case, rc, err, seconds)
        cases += 1
    assert cases >= 200, f"only {cases} cases ran in the time bound"


@needs_rtx
@pytest.mark.slow
def test_fuzz_parser_contract(tmp_path):
    """The real parser in its child process: crashes and odd answers keep the same contract."""
    rng = random.Random(7)
    seeds = [p.read_bytes() for p in seed_models()[:3]]
    for k in range(12):
        case = mutate(rng, rng.choice(seeds))
        d = tmp_path / f"c{k}"
        rc, err, seconds = run_case(d, case, "rtx")
        check_contract(d, case, rc, err, seconds)


@pytest.mark.slow
def test_fuzz_every_verb_that_reads_a_model(tmp_path):
    """The same contract through calibrate, profile, report, kernel, optimize and sweep: exit 0, or exit 2 with one
    line, no traceback, and nothing written on a failure (a longer run of the same loop: 60 cases, none broke it)."""
    rng = random.Random(7)
    seeds = [p.read_bytes() for p in seed_models()]
    deadline = time.monotonic() + 90
    for k in range(20):
        if time.monotonic() > deadline:
            break
        case = mutate(rng, rng.choice(seeds))
        d = tmp_path / f"c{k}"
        d.mkdir()
        model = d / "case.onnx"
        model.write_bytes(case.data)
        for name, data in case.side.items():
            (d / name).write_bytes(data)
        for verb, out in (
            (["calibrate", str(model), "--out", str(d / "q.onnx"), "--samples", "1"], d / "q.onnx"),
            (
                ["profile", str(model), "--iterations", "1", "--warmup", "0", "--profiled", "1", "--parser", "table"],
                None,
            ),
            (["report", str(model), "--out", str(d / "r.html"), "--parser", "table"], d / "r.html"),
            (["kernel", str(model), "--out", str(d / "k"), "--parser", "table", "--iterations", "1"], d / "k"),
            (["optimize", str(model), "--out", str(d / "o.onnx"), "--parser", "table"], d / "o.onnx"),
            (["sweep", str(model), "--no-ray", "--iterations", "1", "--warmup", "0", "--csv", str(d / "s.csv")], None),
        ):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                rc = cli.main([*verb, "-q"])
            text = err.getvalue()
            label = f"[{case.what}] {verb[0]}"
            assert "Traceback" not in text, f"{label} {text}"
            # A sweep whose model reads but whose cells fail (an op ONNX Runtime has no kernel for) exits 3, said too.
            assert rc in ((0, 2, 3) if verb[0] == "sweep" else (0, 2)), f"{label} exit {rc}: {text}"
            if rc in (2, 3):
                lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("warning: ")]
                assert len(lines) == 1 and lines[0].startswith("splitscope: "), f"{label} {text!r}"
                assert out is None or not out.exists(), f"{label} left a partial output file"
