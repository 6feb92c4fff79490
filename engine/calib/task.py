"""Accuracy in the task's terms: beside SNR, the agreement that fits what an output is, chosen from its shape.

- ``classification`` (``[N, C]``, or ``[N, C, 1, 1]``): top-1 and top-5 agreement with the FP32 model.
- ``sequence`` (``[N, T, C]`` holding a distribution per position, a CTC text recogniser's): top-1 agreement
  per position.
- ``detection``: a YOLO head, ``[N, 4+C, boxes]`` (v8 and later: centre, size, class scores) or ``[N, boxes, 5+C]``
  (v5: centre, size, objectness, class scores). Both models' detections are kept above a score of 0.25,
  non-maximum suppressed per class at IoU 0.45, and the FP32 detections are matched by the reduced model's
  of the same class at IoU 0.5 or more: recall, precision and their F1 ("agreement").
- ``dense`` (``[N, C, H, W]`` maps, a text detector's probability map, a segmentation): the IoU of the two
  models' maps thresholded at 0.5 (for maps in [0, 1]) or at the FP32 map's mean.
- ``none``: SNR, cosine and max error only.

The kind is guessed per output and named with the figure; ``--metric`` or the dialog chooses it by hand.
"""

from __future__ import annotations

from typing import Any

import numpy as np

KINDS = ("auto", "classification", "sequence", "detection", "dense", "none")
SCORE, NMS_IOU, MATCH_IOU = 0.25, 0.45, 0.5


def guess(shape: tuple[int, ...] | list[int], sample: np.ndarray | None = None) -> str:
    """The task an output of this shape (and, where given, these values) most likely serves."""
    s = [int(d) for d in shape]
    if len(s) == 2 and s[1] > 1:
        return "classification"
    if len(s) == 4 and s[2] == 1 and s[3] == 1 and s[1] > 1:
        return "classification"
    if len(s) == 3:
        a = np.asarray(sample, np.float64) if sample is not None else None
        if a is not None and a.size and np.allclose(a.sum(axis=-1), 1.0, atol=1e-3) and a.min() >= 0:
            return "sequence"  # a distribution per position (a CTC recogniser's [N, T, classes])
        small, big = min(s[1], s[2]), max(s[1], s[2])
        if 5 <= small <= 4 + 1024 and big >= 4 * small:
            boxes = a[0].T[:, :4] if a is not None and s[1] < s[2] else a[0][:, :4] if a is not None else None
            if boxes is None or float(np.max(boxes)) > 2.0:  # box centres and sizes in pixels
                return "detection"
    if len(s) == 4 and s[2] >= 8 and s[3] >= 8:
        return "dense"
    return "none"


def metric(kind: str, ref: list[np.ndarray], got: list[np.ndarray]) -> dict[str, Any] | None:
    """The task figure for one output over several samples; None for ``none`` or an output it cannot read."""
    if kind == "auto":
        kind = guess(np.asarray(ref[0]).shape, np.asarray(ref[0])) if ref else "none"
    try:
        if kind == "classification":
            return _classification(ref, got)
        if kind == "sequence":
            return _sequence(ref, got)
        if kind == "detection":
            return _detection(ref, got)
        if kind == "dense":
            return _dense(ref, got)
    except (ValueError, IndexError):
        return None
    return None


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


def _sequence(ref: list[np.ndarray], got: list[np.ndarray]) -> dict[str, Any]:
    r = np.concatenate([np.asarray(a, np.float64).reshape(-1, np.asarray(a).shape[-1]) for a in ref])
    g = np.concatenate([np.asarray(a, np.float64).reshape(-1, np.asarray(a).shape[-1]) for a in got])
    same = np.argmax(r, axis=1) == np.argmax(g, axis=1)
    return {
        "kind": "sequence",
        "name": "top-1 agreement per position",
        "value": round(float(np.mean(same)), 4),
        "positions": int(r.shape[0]),
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
    recall = matched / n_ref if n_ref else 1.0
    precision = matched / n_got if n_got else 1.0
    f1 = 2 * recall * precision / (recall + precision) if recall + precision > 0 else 0.0
    return {
        "kind": "detection",
        "name": f"detections matched at IoU ≥ {MATCH_IOU} (F1)",
        "value": round(f1, 4),
        "recall": round(recall, 4),
        "precision": round(precision, 4),
        "fp32_detections": n_ref,
        "reduced_detections": n_got,
        "note": "" if n_ref else "the FP32 model found nothing above a score of 0.25 on these samples",
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
