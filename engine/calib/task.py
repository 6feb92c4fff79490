"""Accuracy in the task's terms: beside SNR, the agreement that fits what an output is. A kind is chosen only when
the output's layout *and values* show that meaning; otherwise none, with the reason.

- ``classification`` (``[N, C]``, or ``[N, C, 1, 1]``, float): top-1 and top-5 agreement with the FP32 model,
  over ``samples`` rows.
- ``sequence``: a CTC text recogniser's ``[N, T, C]`` holding a distribution per position (probabilities, or
  log-probabilities as PyTorch's CTC exports give them), or the same time first, ``[T, 1, C]`` (a batch of one,
  as PyTorch's ``nn.CTCLoss`` convention lays it out): the strings decoded greedily (the best class per position,
  repeats merged, the blank class 0 dropped) matched exactly, with the per-position top-1 agreement beside them;
  or ``[N, T]`` integer ids (a recogniser that decodes inside the model): the id sequences matched exactly. Raw
  logits show no distribution: ``--metric sequence`` reads them the same way.
- ``detection``: a YOLO-style head, ``[N, 4+C, boxes]`` (v8 and later: centre, size, class scores) or
  ``[N, boxes, 5+C]`` (v5/YOLOX: centre, size, objectness, class scores), confirmed by its values: sizes not
  negative, centres and sizes in pixels, scores within [0, 1]. Both models' detections are kept above a score of
  0.25, non-maximum suppressed per class at IoU 0.45, and the FP32 detections are matched by the reduced model's
  of the same class at IoU 0.5 or more: F1 of recall and precision, with the FP32 detections counted beside it.
  No F1 is given over no FP32 detection.
- ``dense`` (``[N, C, H, W]`` maps, a text detector's probability map, a segmentation): the IoU of the two
  models' maps thresholded at 0.5 (for maps in [0, 1]) or at the FP32 map's mean.
- ``none``: SNR, cosine and max error only.

``--metric`` or the dialog chooses the kind by hand.
"""

from __future__ import annotations

from typing import Any

import numpy as np

KINDS = ("auto", "classification", "sequence", "detection", "dense", "none")
SCORE, NMS_IOU, MATCH_IOU = 0.25, 0.45, 0.5
BLANK = 0
"""The CTC blank class (PaddleOCR's, ddddocr's and most CTC heads' first class)."""


def guess(shape: tuple[int, ...] | list[int], sample: np.ndarray | None = None) -> str:
    """The task an output of this shape (and, where given, these values) serves; ``none`` when unsure."""
    return explain(shape, sample)[0]


def explain(shape: tuple[int, ...] | list[int], sample: np.ndarray | None = None) -> tuple[str, str]:
    """The kind :func:`guess` gives, and why (or why none)."""
    s = [int(d) for d in shape]
    a = np.asarray(sample) if sample is not None else None
    integer = a is not None and a.dtype.kind in "iub"
    if integer:
        if len(s) == 2 and s[1] > 1:
            return "sequence", "integer ids per position: a recogniser that decodes inside the model"
        return "none", f"integer output {s}"
    if len(s) == 2 and s[1] > 1:
        return "classification", f"{s}: a score per class"
    if len(s) == 4 and s[2] == 1 and s[3] == 1 and s[1] > 1:
        return "classification", f"{s}: a score per class"
    if len(s) == 3:
        f = np.asarray(a, np.float64) if a is not None else None
        if f is not None and f.size and _distribution(f):
            first = " (time first)" if _time_first(s) else ""
            return "sequence", f"{s}: a distribution over {s[2]} classes per position{first} (CTC)"
        small, big = min(s[1], s[2]), max(s[1], s[2])
        if 5 <= small <= 4 + 1024 and big >= 4 * small:
            if f is None:
                return "none", f"{s}: no values to confirm a detection head with"
            why = _not_a_head(f, s[1] < s[2])
            if why:
                return "none", f"{s} is not a detection head ({why})"
            return "detection", f"{s}: boxes (centre, size in pixels) and scores in [0, 1]"
        return "none", f"{s}: neither a distribution per position nor a detection head"
    if len(s) == 4 and s[2] >= 8 and s[3] >= 8:
        return "dense", f"{s}: maps"
    return "none", f"{s}: no task metric for this layout"


def _distribution(f: np.ndarray) -> bool:
    """Whether the last axis holds probabilities, or log-probabilities, summing to one."""
    if f.min() >= 0 and np.allclose(f.sum(axis=-1), 1.0, atol=1e-3):
        return True
    return bool(f.max() <= 1e-6 and np.allclose(np.exp(f).sum(axis=-1), 1.0, atol=1e-3))


def _time_first(shape: tuple[int, ...] | list[int]) -> bool:
    """``[T, 1, C]``: a batch of one laid out time first (a batch-first ``[1, T, C]`` has its one first)."""
    return len(shape) == 3 and shape[1] == 1 and shape[0] > 1


def _not_a_head(a: np.ndarray, classes_first: bool) -> str:
    """Why ``a`` (one output, ``[N, 4+C, boxes]`` or ``[N, boxes, 5+C]``) is not a YOLO-style head; '' if it is."""
    rows = np.swapaxes(a, 1, 2) if classes_first else a  # [N, boxes, K]
    rows = rows.reshape(-1, rows.shape[-1])
    box, scores = rows[:, :4], rows[:, 4:]
    if not np.all(np.isfinite(rows)):
        return "values are not finite"
    if float(box[:, 2:4].min()) < 0:
        return "its box sizes are negative: regression logits, not decoded boxes"
    if float(np.max(box)) <= 2.0:
        return "its boxes are not in pixels"
    if float(scores.min()) < 0 or float(scores.max()) > 1:
        return "its scores are not within [0, 1]"
    return ""


def metric(kind: str, ref: list[np.ndarray], got: list[np.ndarray]) -> dict[str, Any] | None:
    """The task figure for one output over several samples; ``None`` for ``none``. With ``auto``, an output that
    shows no task gives ``{"kind": "none", "why": ...}`` so that the reason can be said."""
    if kind == "auto":
        if not ref:
            return None
        kind, why = explain(np.asarray(ref[0]).shape, np.concatenate([np.asarray(r) for r in ref[:4]]))
        if kind == "none":
            return {"kind": "none", "why": why}
    try:
        if kind == "classification":
            return _classification(ref, got)
        if kind == "sequence":
            return _sequence(ref, got)
        if kind == "detection":
            return _detection(ref, got)
        if kind == "dense":
            return _dense(ref, got)
    except (ValueError, IndexError) as e:
        return {"kind": "none", "why": f"the outputs do not read as {kind}: {e}"}
    return None


def text(task: dict[str, Any] | None) -> str:
    """The task figure in one phrase, with what it rests on (the CLI, the window and the report say the same)."""
    if not task or task.get("kind") == "none":
        return ""
    if task.get("value") is None:
        return f"{task['name']}: none ({task.get('note', '')})".replace(" ()", "")
    k = task["kind"]
    if k == "classification":
        return (
            f"top-1 agreement {task['top1_agreement']:.1%}, top-5 {task['top5_agreement']:.1%} "
            f"({task['samples']} samples)"
        )
    if k == "sequence":
        base = f"{task['name']} {task['value']:.1%} ({task['matched']} of {task['sequences']})"
        if task.get("positions"):
            base += f", per position {task['per_position']:.1%}"
        return base
    if k == "detection":
        return (
            f"detection F1 {task['value']:.3f} over {task['fp32_detections']} FP32 detections "
            f"(recall {task['recall']:.3f}, precision {task['precision']:.3f})"
        )
    return f"{task['name']} {task['value']:.3f}"


def _classification(ref: list[np.ndarray], got: list[np.ndarray]) -> dict[str, Any]:
    r = np.concatenate([np.asarray(a, np.float64).reshape(len(a), -1) for a in ref])
    g = np.concatenate([np.asarray(a, np.float64).reshape(len(a), -1) for a in got])
    top_r = np.argmax(r, axis=1)
    top_g = np.argmax(g, axis=1)
    k = min(5, g.shape[1])
    top5 = np.argsort(-g, axis=1)[:, :k]
    in5 = np.any(top5 == top_r[:, None], axis=1)
    return {
        "kind": "classification",
        "name": "top-1 agreement",
        "value": round(float(np.mean(top_r == top_g)), 4),
        "top1_agreement": round(float(np.mean(top_r == top_g)), 4),
        "top5_agreement": round(float(np.mean(in5)), 4),
        "samples": int(r.shape[0]),
    }


def ctc_decode(ids: np.ndarray) -> tuple[int, ...]:
    """Greedy CTC: repeats merged, the blank dropped."""
    ids = np.asarray(ids).ravel()
    if not ids.size:
        return ()
    keep = np.ones(ids.size, bool)
    keep[1:] = ids[1:] != ids[:-1]
    return tuple(int(i) for i in ids[keep] if i != BLANK)


def _sequence(ref: list[np.ndarray], got: list[np.ndarray]) -> dict[str, Any]:
    r0 = np.asarray(ref[0])
    if r0.dtype.kind in "iub":  # ids decoded inside the model: the sequences compared as they are
        rows = [(x, y) for a, b in zip(ref, got, strict=True) for x, y in zip(a, b, strict=True)]
        pairs = [(tuple(x.ravel()), tuple(y.ravel())) for x, y in rows]
        matched = sum(x == y for x, y in pairs)
        return {
            "kind": "sequence",
            "name": "sequences matched exactly",
            "value": round(matched / len(pairs), 4) if pairs else None,
            "matched": matched,
            "sequences": len(pairs),
            "note": "" if pairs else "no sequences",
        }
    strings = matched = 0
    same = total = 0
    for a, b in zip(ref, got, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        if _time_first(a.shape):
            a, b = np.swapaxes(a, 0, 1), np.swapaxes(b, 0, 1)
        ra, gb = np.argmax(a, axis=-1), np.argmax(b, axis=-1)  # [N, T]
        same += int(np.sum(ra == gb))
        total += int(ra.size)
        for x, y in zip(ra.reshape(len(ra), -1), gb.reshape(len(gb), -1), strict=True):
            strings += 1
            matched += ctc_decode(x) == ctc_decode(y)
    return {
        "kind": "sequence",
        "name": "decoded strings matched exactly",
        "value": round(matched / strings, 4) if strings else None,
        "matched": matched,
        "sequences": strings,
        "per_position": round(same / total, 4) if total else None,
        "positions": total,
        "note": "" if strings else "no sequences",
    }


def _boxes(a: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per image: (xyxy boxes, scores, classes) after the score threshold and per-class NMS."""
    a = np.asarray(a, np.float64)
    out = []
    for img in a:
        if img.shape[0] < img.shape[1]:  # [4+C, N]: v8 and later
            img = img.T
            xywh, cls = img[:, :4], img[:, 4:]
        else:  # [N, 5+C]: v5, with objectness
            xywh, cls = img[:, :4], img[:, 5:] * img[:, 4:5] if img.shape[1] > 5 else img[:, 4:5]
        c = np.argmax(cls, axis=1)
        sc = cls[np.arange(len(cls)), c]
        keep = sc >= SCORE
        xywh, sc, c = xywh[keep], sc[keep], c[keep]
        xyxy = np.concatenate([xywh[:, :2] - xywh[:, 2:] / 2, xywh[:, :2] + xywh[:, 2:] / 2], axis=1)
        chosen: list[int] = []
        for k in np.unique(c):
            idx = np.where(c == k)[0]
            idx = idx[np.argsort(-sc[idx])]
            while idx.size:
                i = idx[0]
                chosen.append(int(i))
                idx = idx[1:][_iou(xyxy[i], xyxy[idx[1:]]) < NMS_IOU] if idx.size > 1 else idx[1:]
        chosen_a = np.array(chosen, dtype=int)
        out.append((xyxy[chosen_a], sc[chosen_a], c[chosen_a]))
    return out


def _iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    if boxes.size == 0:
        return np.zeros(0)
    lt = np.maximum(box[:2], boxes[:, :2])
    rb = np.minimum(box[2:], boxes[:, 2:])
    inter = np.prod(np.clip(rb - lt, 0, None), axis=1)
    area = np.prod(box[2:] - box[:2]) + np.prod(boxes[:, 2:] - boxes[:, :2], axis=1) - inter
    return inter / np.maximum(area, 1e-12)


def _detection(ref: list[np.ndarray], got: list[np.ndarray]) -> dict[str, Any]:
    n_ref = n_got = matched = 0
    for ra, ga in zip(ref, got, strict=True):
        for (rb, _, rc), (gb, _, gc) in zip(_boxes(ra), _boxes(ga), strict=True):
            n_ref += len(rb)
            n_got += len(gb)
            used = np.zeros(len(gb), bool)
            for box, k in zip(rb, rc, strict=True):
                cand = np.where((gc == k) & ~used)[0]
                if cand.size == 0:
                    continue
                ious = _iou(box, gb[cand])
                best = int(np.argmax(ious))
                if ious[best] >= MATCH_IOU:
                    used[cand[best]] = True
                    matched += 1
    doc: dict[str, Any] = {
        "kind": "detection",
        "name": f"detections matched at IoU ≥ {MATCH_IOU} (F1)",
        "fp32_detections": n_ref,
        "reduced_detections": n_got,
    }
    if not n_ref:
        return {
            **doc,
            "value": None,
            "note": f"the FP32 model found nothing above a score of {SCORE} on these samples: no F1",
        }
    recall = matched / n_ref
    precision = matched / n_got if n_got else 0.0
    f1 = 2 * recall * precision / (recall + precision) if recall + precision > 0 else 0.0
    return {
        **doc,
        "value": round(f1, 4),
        "recall": round(recall, 4),
        "precision": round(precision, 4),
        "note": f"over {n_ref} FP32 detection{'s' if n_ref != 1 else ''}",
    }


def _dense(ref: list[np.ndarray], got: list[np.ndarray]) -> dict[str, Any]:
    r = np.concatenate([np.asarray(a, np.float64).ravel() for a in ref])
    g = np.concatenate([np.asarray(a, np.float64).ravel() for a in got])
    ok = np.isfinite(r) & np.isfinite(g)  # a NaN would make the threshold NaN and every map "agree"
    r, g = r[ok], g[ok]
    bounded = r.size and float(r.min()) >= 0 and float(r.max()) <= 1
    t = 0.5 if bounded or not r.size else float(r.mean())
    rm, gm = r > t, g > t
    union = int(np.sum(rm | gm))
    iou = float(np.sum(rm & gm)) / union if union else 1.0
    return {
        "kind": "dense",
        "name": f"IoU of the maps thresholded at {t:.3g}",
        "value": round(iou, 4),
        "threshold": round(t, 6),
        "fp32_positive": round(float(np.mean(rm)), 6),
    }
