"""A large file's preview made in a child process as the app starts: the same model as made in the window's worker,
handed over with its columns apart, taken only by the open it was made for."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from splitscope.engine.jobs import CancelToken, Partial
from splitscope.engine.model import transfer
from splitscope.engine.split import early
from splitscope.engine.split import preview as P
from splitscope.engine.split.table import TARGET_TENSORRT

DATA = Path(__file__).resolve().parents[1] / "data"
REAL = [DATA / "torch_transformer.onnx", DATA / "torch_transformer_dynamo.onnx", DATA / "torch_detector_if.onnx"]


@pytest.fixture
def small_is_large(monkeypatch):
    """The test exports count as large: each gets a preview."""
    monkeypatch.setattr(early, "PREVIEW_MIN_BYTES", 0)
    monkeypatch.setattr(P, "PREVIEW_MIN_BYTES", 0)
    yield
    early.claim("", "")  # none left running


def _columns(gm):
    nodes, tensors = gm.nodes, gm.graph.tensors
    return (
        list(nodes.name),
        list(nodes.op_type),
        [n.scope for n in nodes],
        [n.status for n in nodes],
        [n.inputs for n in nodes],
        [n.outputs for n in nodes],
        list(tensors.names),
        [tensors.is_initializer_row(r) for r in range(len(tensors.names))],
        gm.graph.inputs,
        gm.graph.outputs,
    )


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.stem)
def test_the_childs_preview_is_the_workers(path, small_is_large, monkeypatch):
    here = P.preview_model(path, TARGET_TENSORRT)
    assert here is not None
    assert early.start(path, "table")
    monkeypatch.setattr(P, "preview_model", lambda *a: pytest.fail("made again in the worker"))
    events = list(P.preview_job(path, "table"))
    assert isinstance(events[-1], Partial)
    gm = events[-1].value
    assert gm.preview and gm.path == here[0].path
    assert _columns(gm) == _columns(here[0])
    assert list(gm.graph.adj.order) == list(here[0].graph.adj.order)
    assert gm.graph.tensors.names.get(here[0].graph.tensors.names[3]) == 3  # the index came over too


def test_a_relative_path_is_taken_and_kept_as_given(small_is_large, monkeypatch):
    """The window compares the preview's path with the full model's to keep what the user opened."""
    monkeypatch.chdir(DATA)
    assert early.start("torch_transformer.onnx", "table")
    monkeypatch.setattr(P, "preview_model", lambda *a: pytest.fail("made again in the worker"))
    events = list(P.preview_job("torch_transformer.onnx", "table"))
    assert events[-1].value.path == Path("torch_transformer.onnx")


def test_another_open_stops_the_child_and_reads_the_file_itself(small_is_large):
    path = REAL[0]
    assert early.start(path, "table")
    child = early._started[early._key(path, "table")]
    events = list(P.preview_job(REAL[1], "table"))  # the window opened something else first
    assert isinstance(events[-1], Partial) and events[-1].value.path == REAL[1]
    assert child._proc.poll() is not None, "the child started for the first file is stopped"
    assert not early._started


def test_a_file_the_child_cannot_read_gives_no_preview(tmp_path, small_is_large):
    bad = tmp_path / "cut.onnx"
    bad.write_bytes(REAL[0].read_bytes()[:5000])
    assert early.start(bad, "table")
    assert [e for e in P.preview_job(bad, "table") if isinstance(e, Partial)] == []


def test_cancel_stops_the_child(small_is_large, monkeypatch):
    path = REAL[0]
    monkeypatch.setattr(P, "preview_model", lambda *a: pytest.fail("a cancelled open reads nothing more"))
    assert early.start(path, "table")
    child = early._started[early._key(path, "table")]
    token = CancelToken()
    token.cancel()
    assert [e for e in P.preview_job(path, "table", token) if isinstance(e, Partial)] == []
    assert child._proc.poll() is not None


def test_an_open_closed_at_once_stops_the_child(small_is_large):
    """The window cancels or replaces the open while it waits: the child it took is stopped, not left to run."""
    path = REAL[0]
    assert early.start(path, "table")
    child = early._started[early._key(path, "table")]
    gen = P.preview_job(path, "table")
    next(gen)
    gen.close()
    assert child._proc.poll() is not None


def test_no_preview_in_the_child_is_not_looked_for_again(tmp_path, small_is_large, monkeypatch):
    """A file the child read and found no preview in (a name that is not UTF-8): the worker does not read it again."""
    data = (DATA / "torch_transformer.onnx").read_bytes()
    name = b"/encoder/layers.0/self_attn/Transpose"
    assert data.count(name) >= 1
    bad = tmp_path / "latin.onnx"
    bad.write_bytes(data.replace(name, b"\xff" * len(name), 1))
    assert early.start(bad, "table")
    monkeypatch.setattr(P, "preview_model", lambda *a: pytest.fail("read again in the worker"))
    assert [e for e in P.preview_job(bad, "table") if isinstance(e, Partial)] == []


def test_a_file_written_since_the_start_is_read_anew(tmp_path, small_is_large):
    path = tmp_path / "m.onnx"
    path.write_bytes(REAL[0].read_bytes())
    assert early.start(path, "table")
    child = early._started[early._key(path, "table")]
    path.write_bytes(REAL[1].read_bytes())  # another model under the same name
    events = list(P.preview_job(path, "table"))
    assert child._proc.poll() is not None
    assert events[-1].value.nodes.name[0] == P.preview_model(REAL[1], TARGET_TENSORRT)[0].nodes.name[0]


def test_arguments_the_window_refuses_start_nothing_and_print_nothing(capsys, small_is_large):
    from splitscope.gui.shell.args import start_preview

    for argv in ([str(REAL[0]), "--bogus"], [str(REAL[0]), "--help"], ["--parser", "nonsense", str(REAL[0])]):
        start_preview(argv)
    assert capsys.readouterr() == ("", "")
    assert not early._started
    start_preview([str(REAL[0]), "--parser", "table"])
    assert early._key(REAL[0], "table") in early._started


def test_nothing_starts_for_a_small_file_or_without_a_model():
    from splitscope.gui.shell.args import start_preview

    assert not early.start(REAL[0], "table")  # 100 kB: the full load is as quick
    assert not early.start(DATA / "no_such_model.onnx", "table")
    start_preview([])
    start_preview(["--no-such-flag"])
    start_preview(["--parser", "nonsense", str(REAL[0])])
    assert not early._started


def test_the_transfer_keeps_every_column_and_sends_them_apart():
    made = P.preview_model(DATA / "torch_transformer.onnx", TARGET_TENSORRT)
    assert made is not None
    stream, buffers = transfer.dumps(made)
    assert buffers and len(stream) < sum(b.raw().nbytes for b in buffers), "the columns travel beside the pickle"
    gm, order = transfer.loads(stream, [bytes(b.raw()) for b in buffers])
    assert _columns(gm) == _columns(made[0]) and list(order) == list(made[1])


def test_the_child_is_registered_for_the_bundle():
    from splitscope.engine.entry import CHILDREN, child_command

    assert CHILDREN["preview"] == "splitscope.engine.split.preview_proc"
    assert child_command("preview", "m.onnx", "table")[:3] == [sys.executable, "-m", CHILDREN["preview"]]


def test_starting_it_imports_neither_numpy_nor_qt():
    """It runs before the window's imports: nothing of theirs may come with it."""
    import subprocess

    code = (
        "import sys; from splitscope.gui.shell.args import start_preview; start_preview([]); "
        "print(sorted(m for m in ('numpy', 'PySide6', 'onnx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_name_tables_from_another_process_are_indexed_when_first_asked(tmp_path):
    """A string's hash is the process's own: a table read back is indexed again here, at its first lookup or
    addition (another thread asking meanwhile waits for that one index), or by the worker's ``index_arrived``."""
    import pickle
    import subprocess
    import threading

    from splitscope.engine.model.names import Names

    names = [f"layer.{k}/out" for k in range(3000)] + ["é", "😀 x"]
    made = tmp_path / "tables.pickle"
    code = (
        "import pickle, sys\n"
        "from splitscope.engine.model import transfer\n"
        "from splitscope.engine.model.names import Names\n"
        f"names = {names!r}\n"
        "t = Names(names); t.compact(); u = Names(names[:10]); u.compact()\n"
        "stream, bufs = transfer.dumps((t, u, Names(), Names(['a', 'a'], indexed=False)))\n"
        "pickle.dump((stream, [bytes(b.raw()) for b in bufs]), open(sys.argv[1], 'wb'))\n"
    )
    subprocess.run([sys.executable, "-c", code, str(made)], check=True, cwd=tmp_path)

    def read() -> tuple[Names, ...]:
        stream, bufs = pickle.loads(made.read_bytes())
        return transfer.loads(stream, bufs)

    t, u, empty, plain = read()
    assert list(t) == names and list(plain) == ["a", "a"]
    assert not len(t._slots) and t.get("layer.7/out") == 7 and len(t._slots), "indexed at the first lookup"
    assert [t.get(s) for s in names] == list(range(len(names))) and t.get("absent") is None and "é" in t
    assert empty.get("x") is None and empty.add("x") == 0 and empty.get("x") == 0
    assert u.add("new") == 10 and u.get("new") == 10 and u.get(names[9]) == 9, "indexed before an addition"
    assert list(plain.copy()) == ["a", "a"], "an unindexed table read back copies"

    t, u, *_ = read()
    c = t.copy()
    assert c.get(names[-1]) == len(names) - 1 and c.add("only in the copy") == len(names)
    assert "only in the copy" not in t
    found: list[list[int | None]] = []
    threads = [threading.Thread(target=lambda: found.append([u.get(s) for s in names[:10]])) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert found == [list(range(10))] * 4, "four threads asking at once: each finds every row"

    t, u, *_ = read()
    assert t in transfer._arrived
    from splitscope.engine.model import names as N

    with N._INDEXING_GUARD:  # another thread indexing t: a lookup in u does not wait for it
        busy = N._INDEXING.setdefault(id(t), threading.Lock())
    with busy:
        assert u.get(names[5]) == 5
    transfer.index_arrived()
    assert len(t._slots) and t not in transfer._arrived and t.get(names[123]) == 123
