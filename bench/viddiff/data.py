"""VidDiffBench rows and prediction files, read as VidDiff's code reads them (``data/load_viddiff_dataset.py``).

A dataset is a folder laid out like the release: ``dataset.jsonl`` (one row a line), ``dataset.json`` (a list of
rows) or ``test.jsonl``, with the videos beside it (paths relative to the folder, or absolute); a dataset file can
also be named directly. ``videos``, ``differences_annotated`` and ``differences_gt`` may be JSON strings, as in the
Hugging Face parquet (which ``load_viddiff_dataset`` decodes with ``json.loads``), or objects.

A difference whose ground-truth label is null is not part of the benchmark (VidDiff filters them everywhere with
``v is not None``), so :class:`VidDiffSample` keeps only labelled ones. Problems that only affect one sample (a
missing video, a label without a description) are kept on the sample for the caller to report, not raised.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from bench.loaders import BenchDataError, check_unique, read_json
from retrieval.core.user_files import DATA_FILE_LIMIT, parse_json, read_text

# frames per second VidDiff's LMM baselines sample each domain at (lmms/configs/config.yaml, lmm.fps_inference)
DOMAIN_FPS = {"fitness": 4, "ballsports": 5, "diving": 6, "music": 1, "surgery": 1}
DATASET_FILES = ("dataset.jsonl", "dataset.json", "test.jsonl")
REQUIRED = ("sample_key", "differences_annotated", "differences_gt")

# (path, frames_trim as (start, end) or None): VidDiff reads the video as ``vid[slice(*frames_trim)]``, so end is
# excluded and either bound may be None or negative, as in a Python slice
Video = tuple[Path, Optional[tuple[Optional[int], Optional[int]]]]


@dataclass(frozen=True)
class VidDiffSample:
    """One pair of videos with its labelled differences (``differences``: key -> description; ``gt``: key ->
    'a' | 'b' | 'c'; both only for keys whose label is not null) and ``n_open``, the most differences an
    open-mode answer may give."""

    sample_key: str
    split: str
    domain: str
    action: str
    action_description: str
    videos: tuple[Video, ...]
    differences: dict[str, str]
    gt: dict[str, str]
    n_open: int
    action_name: str = ""
    problems: tuple[str, ...] = ()


def dataset_file(path: Path) -> Path:
    """The rows file of a VidDiffBench-shaped folder (or ``path`` itself when it is a file)."""
    path = Path(path)
    if path.is_file():
        return path
    if not path.exists():
        raise BenchDataError(f"dataset not found: {path}")
    for name in DATASET_FILES:
        if (path / name).is_file():
            return path / name
    raise BenchDataError(f"{path} holds none of {', '.join(DATASET_FILES)}")


def read_dataset(folder: Path) -> list[VidDiffSample]:
    """Every row of the dataset in ``folder`` (a folder or the rows file itself), in file order."""
    path = dataset_file(folder)
    rows = _read_rows(path)
    if not rows:
        raise BenchDataError(f"dataset {path} holds no rows")
    samples = [_sample(row, i, path) for i, row in enumerate(rows)]
    check_unique((s.sample_key for s in samples), f"dataset {path}: sample_key")
    return samples


def _read_rows(path: Path) -> list:
    if path.suffix != ".jsonl":
        data = read_json(path, "dataset")
        if not isinstance(data, list):
            raise BenchDataError(f"dataset {path}: expected a list of rows")
        return data
    # read as any data file is: at most DATA_FILE_LIMIT bytes, each line's JSON nested at most JSON_DEPTH_LIMIT deep
    text = read_text(path, "dataset", DATA_FILE_LIMIT, BenchDataError)
    return [parse_json(line, f"dataset {path} line {n}", BenchDataError)
            for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def _decoded(value: Any, what: str, where: str) -> Any:
    """A field that the parquet stores as a JSON string, as an object (nested as deep as a file may be)."""
    if isinstance(value, str):
        return parse_json(value, f"{where}: {what} (a string)", BenchDataError)
    return value


def _sample(row: Any, index: int, path: Path) -> VidDiffSample:
    where = f"dataset {path} row {index}"
    if not isinstance(row, dict):
        raise BenchDataError(f"{where}: expected an object")
    missing = [f for f in REQUIRED if f not in row]
    if missing:
        raise BenchDataError(f"{where} lacks {', '.join(missing)}")
    where = f"dataset {path} sample {row['sample_key']}"
    labels = _decoded(row["differences_gt"], "differences_gt", where)
    annotated = _decoded(row["differences_annotated"], "differences_annotated", where)
    if not isinstance(labels, dict) or not isinstance(annotated, dict):
        raise BenchDataError(f"{where}: differences_gt and differences_annotated must be objects")
    problems: list[str] = []
    gt = {str(k): v for k, v in labels.items() if v is not None}
    differences = _descriptions(annotated, gt, problems)
    videos = _videos(_decoded(row.get("videos"), "videos", where), path.parent, problems)
    action = row.get("action") if row.get("action") is not None else row.get("action_name")
    n_open = row.get("n_differences_open_prediction")
    return VidDiffSample(
        sample_key=str(row["sample_key"]), split=str(row.get("split") or ""), domain=str(row.get("domain") or ""),
        action=str(action if action is not None else ""), action_description=str(row.get("action_description") or ""),
        videos=videos, differences=differences, gt=gt,
        n_open=int(n_open) if isinstance(n_open, (int, float)) and not isinstance(n_open, bool) else len(gt),
        action_name=str(row.get("action_name") or ""), problems=tuple(problems))


def _descriptions(annotated: dict, gt: dict[str, str], problems: list[str]) -> dict[str, str]:
    """key -> description for the labelled keys, in ``differences_annotated`` order (the order VidDiff's
    matching prompt lists them in)."""
    out = {}
    for key, entry in annotated.items():
        key = str(key)
        if key in gt:
            text = entry.get("description") if isinstance(entry, dict) else None
            if not isinstance(text, str):
                problems.append(f"difference {key} has a label but no description")
            out[key] = text if isinstance(text, str) else ""
    for key in gt:
        if key not in out:
            problems.append(f"difference {key} has a label but no annotation")
            out[key] = ""
    return out


def _videos(value: Any, base: Path, problems: list[str]) -> tuple[Video, ...]:
    if not isinstance(value, list) or len(value) != 2 or not all(isinstance(v, dict) and "path" in v for v in value):
        problems.append("videos is not a list of two {path, frames_trim} objects")
        return ()
    videos = []
    for v in value:
        path = Path(str(v["path"]))
        path = path if path.is_absolute() else base / path
        if not path.exists():
            problems.append(f"video not found: {path}")
        videos.append((path, _trim(v.get("frames_trim"), path, problems)))
    return tuple(videos)


def _trim(value: Any, path: Path, problems: list[str]) -> Optional[tuple[Optional[int], Optional[int]]]:
    """``frames_trim`` as the (start, end) of ``slice(*frames_trim)``: two bounds, each an int or None, and
    optionally a step of None or 1 (``[start, end, None]``); absent or null: the whole video."""
    if value is None:
        return None
    bounds_ok = isinstance(value, (list, tuple)) and len(value) in (2, 3) and all(
        t is None or (isinstance(t, int) and not isinstance(t, bool)) for t in value)
    if not bounds_ok or (len(value) == 3 and value[2] not in (None, 1)):
        problems.append(f"frames_trim {value!r} of {path.name} is not [start, end] frame numbers")
        return None
    return value[0], value[1]


# ---------------------------------------------------------------- predictions


def read_predictions(path: Path) -> dict[str, Any] | list[Any]:
    """A predictions file: ``{sample_key: {diff_key: ...}}`` (what VidDiff's ``log_input_preds`` writes) or a
    list with one entry a dataset row, in dataset order (what ``eval_viddiff`` takes)."""
    data = read_json(path, "predictions")
    if isinstance(data, dict):
        data = {str(k): v for k, v in data.items()}
    elif not isinstance(data, list):
        raise BenchDataError(f"predictions {path}: expected {{sample_key: {{...}}}} or a list, one entry a sample")
    if not data:
        raise BenchDataError(f"predictions {path} are empty")
    bad = next((k for k, v in (data.items() if isinstance(data, dict) else enumerate(data))
                if v is not None and not isinstance(v, dict)), None)
    if bad is not None:
        raise BenchDataError(f"predictions {path}: entry {bad} is not an object of difference predictions")
    return data


def align_predictions(samples: list[VidDiffSample], predictions: dict[str, Any] | list[Any],
                      where: str = "predictions") -> tuple[list[dict], list[str], list[str]]:
    """One prediction dict per sample (``{}`` where a sample has none), the sample keys without predictions, and
    the prediction keys naming no sample (ignored). A list must be as long as the dataset."""
    if isinstance(predictions, list):
        if len(predictions) != len(samples):
            raise BenchDataError(f"{where} list has {len(predictions)} entries for {len(samples)} samples; "
                                 "a list must follow the dataset order one for one")
        aligned = [dict(p or {}) for p in predictions]
        return aligned, [s.sample_key for s, p in zip(samples, aligned, strict=False) if not p], []
    keys = {s.sample_key for s in samples}
    aligned = [dict(predictions.get(s.sample_key) or {}) for s in samples]
    absent = [s.sample_key for s, p in zip(samples, aligned, strict=False) if not p]
    unknown = [k for k in predictions if k not in keys]
    if len(unknown) == len(predictions):
        raise BenchDataError(f"{where}: no sample_key matches the dataset (first: {unknown[0]!r})")
    return aligned, absent, unknown


def detect_mode(predictions: list[dict]) -> str:
    """'closed' when the difference predictions are letters (``{"0": "a"}``), 'open' when they are
    ``{description, prediction}`` objects, decided by the first one (as ``format_predictions_closed`` does)."""
    for pred in predictions:
        for value in pred.values():
            return "open" if isinstance(value, dict) else "closed"
    raise BenchDataError("predictions hold no difference predictions at all")
