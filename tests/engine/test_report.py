"""The stakeholder report on real models: valid HTML whose figures equal the report's JSON, nothing fetched
when it is opened (static check, and headless Chromium with the network blocked), a PDF with the expected
pages (text extracted with pypdf), files of another model refused, a large model's report that stays small,
and Model Explorer node data."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from splitscope.engine.cli import main as cli
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.jobs import run_to_end
from splitscope.engine.present.report import make_report
from splitscope.engine.sample import SAMPLE_MODEL

ROOT = Path(__file__).resolve().parents[2]
DETECTOR = ROOT / "tests" / "data" / "torch_two_stage_ort.onnx"
TRANSFORMER = ROOT / "tests" / "data" / "torch_transformer.onnx"


@pytest.fixture(scope="module")
def detector_files(tmp_path_factory):
    """A real CPU profile and a calibration of the detector, made by the CLI."""
    d = tmp_path_factory.mktemp("det")
    assert cli(["profile", str(DETECTOR), "--iterations", "20", "--json", str(d / "p.json"), "-q"]) == 0
    assert (
        cli(
            [
                "calibrate",
                str(DETECTOR),
                "--samples",
                "2",
                "--out",
                str(d / "q.onnx"),
                "--json",
                str(d / "c.json"),
                "-q",
            ]
        )
        == 0
    )
    return d


def _figures(html: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in re.findall(r'data-figure="([a-z_0-9]+)">([^<]*)<', html):
        out.setdefault(key, []).append(value)
    return out


def test_html_is_valid_self_contained_and_shows_the_jsons_figures(tmp_path, detector_files):
    import html5lib

    out, js = tmp_path / "r.html", tmp_path / "r.json"
    assert (
        cli(
            [
                "report",
                str(DETECTOR),
                "--profile",
                str(detector_files / "p.json"),
                "--calibration",
                str(detector_files / "c.json"),
                "--out",
                str(out),
                "--json",
                str(js),
                "-q",
            ]
        )
        == 0
    )
    html = out.read_text(encoding="utf-8")
    html5lib.HTMLParser(strict=True).parse(html)  # raises on any parse error
    doc = json.loads(js.read_text())
    fig = _figures(html)
    assert fig["partitions"][0] == str(doc["numbers"]["partitions"])
    assert fig["plugin_nodes"] == [str(doc["numbers"]["plugin_nodes"])]
    assert fig["work_share"] == [f"{doc['numbers']['work_share']:.0%}"] and "measured node time" in html
    assert fig["boundary"] == [doc["numbers"]["boundary"]]
    assert fig["headline"] == [doc["headline"].replace("'", "&#39;")]
    assert fig["latency_mean"] == [f"{doc['time']['latency_ms']['mean']:.4g} ms"]
    assert [f"{a['snr_db']:.1f} dB" for a in doc["calibration"]["accuracy"]] == fig["snr_db"]
    assert fig["partitions"][1:] == [str(s["partitions"]) for s in doc["scenarios"]]
    for section in (
        "The decision",
        "The split",
        "Partitions and boundary bytes",
        "Where the time goes",
        "Precision and accuracy",
        "The commitment",
        "How every figure was obtained",
    ):
        assert f"<h2>{section}</h2>" in html
    assert "ROIAlign_TRT" in html  # the shipped plugin that serves the RoiAlign
    # Nothing to fetch: no external resource of any kind, every figure an inline SVG.
    assert not re.search(r'\b(src|href)\s*=\s*"(?!#)', html) and "url(" not in html and "@import" not in html
    assert "<script" not in html and "<link" not in html and html.count("<svg") >= 4


def _page_requests(browser: str, page: Path, tmp: Path) -> list[str]:
    """URLs the page itself asked for (Chromium's own service calls, which carry no page origin, left out),
    with every network request failing (a dead proxy)."""
    log = tmp / f"{page.stem}.netlog.json"
    quiet = [
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        "--disable-default-apps",
        f"--user-data-dir={tmp / 'profile'}",
    ]
    subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--proxy-server=127.0.0.1:9",
            *quiet,
            f"--log-net-log={log}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    doc = json.loads(log.read_text(encoding="utf-8", errors="replace"))
    start = doc["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [
        e["params"]["url"]
        for e in doc["events"]
        if e["type"] == start
        and "file://" in str(e["params"].get("network_isolation_key", ""))
        and not e["params"]["url"].startswith(("file:", "data:"))
    ]


def test_opening_the_report_makes_no_network_request(tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("no headless Chromium on this machine (packaging/system-deps.sh installs it for the tests)")
    control = tmp_path / "control.html"  # the check sees what a page fetches
    control.write_text('<!DOCTYPE html><img src="http://example.com/x.png" alt="">')
    assert _page_requests(browser, control, tmp_path) == ["http://example.com/x.png"]
    out = tmp_path / "r.html"
    run_to_end(make_report(SAMPLE_MODEL, out))
    assert _page_requests(browser, out, tmp_path) == []


def test_pdf_has_the_title_page_and_sections(tmp_path, detector_files):
    from pypdf import PdfReader

    out = tmp_path / "r.pdf"
    res = run_to_end(
        make_report(
            DETECTOR, out, profiles=[str(detector_files / "p.json")], calibration=str(detector_files / "c.json")
        )
    )
    pages = [p.extract_text() for p in PdfReader(out).pages]
    assert len(pages) >= 5 and out.read_bytes().startswith(b"%PDF")
    title = pages[0]
    for word in ("torch_two_stage_ort.onnx", "Date", "GPU", "TensorRT", "Parser", res["date"][:10]):
        assert word in title
    rest = "\n".join(pages[1:])
    for section in (
        "The decision",
        "The split",
        "Where the time goes",
        "Precision and accuracy",
        "The commitment",
        "How every figure was obtained",
    ):
        assert section in rest
    assert all("page " in p and f"of {len(pages)}" in p for p in pages)  # numbered


def test_files_of_another_model_are_refused(tmp_path, detector_files):
    with pytest.raises(SplitscopeError, match=r"--profile p.json is of another model \(torch_two_stage_ort"):
        run_to_end(make_report(SAMPLE_MODEL, tmp_path / "r.html", profiles=[str(detector_files / "p.json")]))
    with pytest.raises(SplitscopeError, match=r"--calibration c\.json is of another model"):
        run_to_end(make_report(TRANSFORMER, tmp_path / "r.html", calibration=str(detector_files / "c.json")))
    (tmp_path / "bad.json").write_text("{not json")
    assert cli(["report", "--profile", str(tmp_path / "bad.json"), "--out", str(tmp_path / "r.html")]) == 2
    assert cli(["report", "--out", str(tmp_path / "r.docx")]) == 2
    assert cli(["report", "--scenario", "nope", "--out", str(tmp_path / "r.html")]) == 2
    assert not (tmp_path / "r.html").exists()


def test_a_large_models_report_draws_blocks_and_stays_small(tmp_path):
    import onnx

    from tests.bench import make_transformer

    model = tmp_path / "big.onnx"
    onnx.save(make_transformer(12_000, break_every=400), model)
    out = tmp_path / "big.html"
    res = run_to_end(make_report(model, out, parser="table"))
    html = out.read_text(encoding="utf-8")
    overview = html[html.index('aria-label="Split overview"') :]
    overview = overview[: overview.index("</svg>")]
    assert res["numbers"]["nodes"] >= 12_000 and overview.count("<rect") < 800  # blocks, not 12k boxes
    assert out.stat().st_size < 10_000_000
    _texts_inside_their_boxes(overview)


def _texts_inside_their_boxes(svg: str) -> None:
    """Every label of the split figure lies inside the box drawn just before it that holds its anchor: its
    baseline and its width (at 0.62 em a character, wider than DejaVu Sans' average) within that box."""
    rects: list[tuple[float, float, float, float]] = []
    for m in re.finditer(r"<rect ([^>]*)/>|<text ([^>]*)>([^<]*)</text>", svg):
        if m.group(1):
            v = dict(re.findall(r'(\w[\w-]*)="([^"]*)"', m.group(1)))
            if "width" in v and "height" in v and float(v["height"]) > 6:  # a box or a frame, not a share bar
                rects.append((float(v["x"]), float(v["y"]), float(v["width"]), float(v["height"])))
            continue
        v = dict(re.findall(r'(\w[\w-]*)="([^"]*)"', m.group(2)))
        if v.get("text-anchor") == "end":
            continue  # an engine tag above its outline
        x, y, size = float(v["x"]), float(v["y"]), float(v["font-size"])
        text = m.group(3).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
        box = next((r for r in reversed(rects) if r[0] <= x <= r[0] + r[2] and r[1] <= y <= r[1] + r[3] + 1), None)
        assert box is not None, f"{text!r} at ({x}, {y}) is in no box"
        assert y - size * 0.8 >= box[1] - 1 and y <= box[1] + box[3] + 1, f"{text!r} spills out of its box {box}"
        assert x + len(text) * size * 0.62 <= box[0] + box[2] + 2, f"{text!r} runs past its box {box}"


@pytest.mark.parametrize("model", [SAMPLE_MODEL, DETECTOR, TRANSFORMER], ids=["sample", "detector", "transformer"])
def test_the_split_figures_labels_stay_inside_their_boxes(tmp_path, model):
    out = tmp_path / "r.html"
    run_to_end(make_report(model, out, parser="table"))
    html = out.read_text(encoding="utf-8")
    overview = html[html.index('aria-label="Split overview"') :]
    _texts_inside_their_boxes(overview[: overview.index("</svg>")])


def test_model_explorer_node_data(tmp_path, detector_files):
    assert (
        cli(
            [
                "report",
                str(DETECTOR),
                "--profile",
                str(detector_files / "p.json"),
                "--calibration",
                str(detector_files / "c.json"),
                "--node-data",
                str(tmp_path),
                "-q",
            ]
        )
        == 0
    )
    split = json.loads((tmp_path / "torch_two_stage_ort.split.json").read_text())["main_graph"]["results"]
    assert split["/RoiAlign"]["value"] == "plugin" and split["/cls/cls.1/Gemm"]["value"] == "delegate"
    assert all(r["bgColor"].startswith("#") for r in split.values())
    time = json.loads((tmp_path / "torch_two_stage_ort.time.json").read_text())["main_graph"]
    assert time["gradient"][0]["stop"] == 0 and time["gradient"][-1]["stop"] == 1
    assert time["results"]["/RoiAlign"]["value"] > 0
    prec = json.loads((tmp_path / "torch_two_stage_ort.precision.json").read_text())["main_graph"]["results"]
    assert prec["/cls/cls.1/Gemm"]["value"] == "INT8"


def test_an_odd_model_name_reads_right_in_the_pdf_footer(tmp_path):
    from pypdf import PdfReader

    odd = tmp_path / "bob's&model.onnx"
    odd.write_bytes(SAMPLE_MODEL.read_bytes())
    run_to_end(make_report(odd, tmp_path / "r.pdf", parser="table"))
    text = PdfReader(tmp_path / "r.pdf").pages[1].extract_text()
    assert "bob's&model.onnx" in text and "&#39;" not in text and "&amp;" not in text
