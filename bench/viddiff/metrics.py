"""VidDiff's metrics, closed accuracy and open recall, computed as ``eval_viddiff.py`` (jmhb0/viddiff) does.

The rule, function by function of ``eval_viddiff.py``:

- ``format_predictions_closed``: closed predictions may be letters, ``{"0": "a"}``, or open-style objects,
  ``{"0": {"description": "", "prediction": "a"}}``; both mean the letter.
- ``add_gt_and_details`` (closed) / ``do_matching`` (open): every difference whose ground-truth label is not null
  gets one row; a difference with no prediction gets ``pred = None`` (NaN in their DataFrame). A prediction key
  that is not a labelled difference makes their ``assert`` fail; here it is ignored and counted (``extra_keys``),
  as is a prediction for a difference labelled 'c' (their rows for 'c' are dropped before scoring).
- ``make_eval_df`` + ``compute_metrics``: only rows whose label is 'a' or 'b' are scored ('c' = no clear
  difference, and null, are excluded); a row is correct when ``pred == gt`` exactly, so a missing prediction,
  a 'c' and any other value (``'A'``, ``'(a)'``: ``validate_prediction_schema`` only warns about those) are
  wrong. Closed: ``accuracy_closed`` = correct / scored. Open: ``recall`` = the same ratio, where ``pred`` is the
  letter of the prediction the judge matched to that difference (None when unmatched); ``err_nomatch`` = share
  of scored rows with ``pred`` None, ``matched_items = 1 - err_nomatch``, ``err_flippedpred`` = share with a
  letter 'a'/'b' that is not the label, ``err_is_c`` = share predicting 'c'.
- ``validate_prediction_schema`` means to reject an open answer with more than ``n_differences_open_prediction``
  items (its test, ``eval_mode == 0``, never holds, so it never does); here the extra items are cut off (the
  first N kept, in file order) and reported.

Values are percentages rounded to 2 decimals, with the counts behind them, overall and per split, domain and
action (every breakdown sums back to the overall counts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional

from bench.loaders import BenchDataError
from bench.viddiff.data import VidDiffSample

SCORED = ("a", "b")
LETTERS = ("a", "b", "c")
GROUPS = {"by_split": "split", "by_domain": "domain", "by_action": "action"}


@dataclass(frozen=True)
class Item:
    """One predicted difference: its description ('' in closed mode) and its letter (any value, as given)."""

    description: Optional[str]
    prediction: Any


@dataclass(frozen=True)
class Scored:
    """One scored ground-truth difference (label 'a' or 'b') and the letter predicted for it (None: none)."""

    sample: VidDiffSample
    key: str
    gt: str
    pred: Any

    @property
    def correct(self) -> bool:
        return self.pred == self.gt


def percent(part: int, whole: int) -> Optional[float]:
    return round(100.0 * part / whole, 2) if whole else None


def items_of(pred: dict, where: str) -> dict[str, Item]:
    """A sample's predictions as items; a letter stands for ``{"description": "", "prediction": letter}``."""
    out = {}
    for key, value in pred.items():
        if isinstance(value, dict):
            if "prediction" not in value:
                raise BenchDataError(f"{where}, difference {key}: an object without a 'prediction'")
            desc = value.get("description")
            out[str(key)] = Item(desc if isinstance(desc, str) else None, value["prediction"])
        else:
            out[str(key)] = Item("", value)
    return out


def check(samples: list[VidDiffSample], predictions: list[dict], mode: str) -> None:
    """Raise on what would stop scoring half-way (a wrong shape, nothing to score), before any work is done."""
    if not any(_scored_keys(s) for s in samples):
        raise BenchDataError("no ground-truth difference is labelled 'a' or 'b'; nothing to score")
    if mode == "open":
        open_items(samples, predictions)
    else:
        for sample, pred in zip(samples, predictions, strict=False):
            items_of(pred, f"predictions for {sample.sample_key}")


def summary(rows: list[Scored]) -> dict:
    """Overall and per split / domain / action: value (%), correct and scored counts."""
    if not rows:
        raise BenchDataError("no ground-truth difference is labelled 'a' or 'b'; nothing to score")
    out: dict[str, Any] = {"overall": _group(rows)}
    for name, attr in GROUPS.items():
        groups: dict[str, list[Scored]] = {}
        for row in rows:
            groups.setdefault(getattr(row.sample, attr) or "-", []).append(row)
        out[name] = {k: _group(v) for k, v in sorted(groups.items())}
    return out


def _group(rows: list[Scored]) -> dict:
    correct = sum(r.correct for r in rows)
    return {"value": percent(correct, len(rows)), "correct": correct, "scored": len(rows)}


def _scored_keys(sample: VidDiffSample) -> list[str]:
    return [k for k, v in sample.gt.items() if v in SCORED]


# ---------------------------------------------------------------- closed


def closed_accuracy(samples: list[VidDiffSample], predictions: list[dict]) -> dict:
    """Closed-mode accuracy of ``predictions`` (one dict a sample, aligned with ``samples``)."""
    rows: list[Scored] = []
    extra = invalid = c_preds = 0
    for sample, pred in zip(samples, predictions, strict=False):
        items = items_of(pred, f"predictions for {sample.sample_key}")
        keys = _scored_keys(sample)
        extra += sum(k not in keys for k in items)
        for key in keys:
            item = items.get(key)
            rows.append(Scored(sample, key, sample.gt[key], item.prediction if item else None))
    for row in rows:
        invalid += row.pred is not None and row.pred not in LETTERS
        c_preds += row.pred == "c"
    return {"mode": "closed", "metric": "accuracy", **summary(rows),
            "missing_predictions": sum(r.pred is None for r in rows), "extra_keys": extra,
            "invalid_letters": invalid, "c_predictions": c_preds, **_excluded(samples)}


def _excluded(samples: Iterable[VidDiffSample]) -> dict:
    samples = list(samples)
    return {"excluded_gt_c": sum(v == "c" for s in samples for v in s.gt.values()),
            "excluded_gt_other": sum(v not in LETTERS for s in samples for v in s.gt.values())}


# ---------------------------------------------------------------- open


def open_items(samples: list[VidDiffSample], predictions: list[dict]) -> tuple[list[dict[str, Item]], list[str]]:
    """Open-mode items per sample, cut to each sample's ``n_open`` (first ones kept), with a note per cut."""
    out, notes = [], []
    for sample, pred in zip(samples, predictions, strict=False):
        where = f"predictions for {sample.sample_key}"
        items = items_of(pred, where)
        if any(not isinstance(v, dict) for v in pred.values()):
            raise BenchDataError(f"{where}: open mode needs {{description, prediction}} objects, found a letter")
        if len(items) > sample.n_open:
            dropped = list(items)[sample.n_open:]
            notes.append(f"sample {sample.sample_key}: {len(items)} predicted differences, at most {sample.n_open} "
                         f"allowed; kept the first {sample.n_open}, dropped key(s) {', '.join(dropped)}")
            items = dict(list(items.items())[: sample.n_open])
        out.append(items)
    return out, notes


def flip(letter: Any) -> Any:
    """'a' <-> 'b', anything else unchanged (``flip_abc``)."""
    return {"a": "b", "b": "a"}.get(letter, letter) if isinstance(letter, str) else letter


def open_recall(samples: list[VidDiffSample], items: list[dict[str, Item]], matches: list[dict[str, str]],
                opposite: Optional[list[set[str]]] = None) -> dict:
    """Open-mode recall given each sample's matching (gt key -> predicted key, already validated) and, where the
    reverse-statement check ran, the gt keys whose matched description says the opposite (their letter flips)."""
    rows: list[Scored] = []
    for i, (sample, its, match) in enumerate(zip(samples, items, matches, strict=False)):
        for key in _scored_keys(sample):
            item = its.get(match.get(key, ""))
            letter = item.prediction if item else None
            if opposite is not None and key in opposite[i]:
                letter = flip(letter)
            rows.append(Scored(sample, key, sample.gt[key], letter))
    n = len(rows)
    nomatch = sum(r.pred is None for r in rows)
    out = {"mode": "open", "metric": "recall", **summary(rows)}
    out["errors"] = {
        "err_nomatch": percent(nomatch, n),
        "err_flippedpred": percent(sum(r.pred in SCORED and r.pred != r.gt for r in rows), n),
        "err_is_c": percent(sum(r.pred == "c" for r in rows), n),
        "matched_items": percent(n - nomatch, n),
    }
    out["unmatched"] = nomatch
    out["invalid_letters"] = sum(r.pred is not None and r.pred not in LETTERS for r in rows)
    return {**out, **_excluded(samples)}
