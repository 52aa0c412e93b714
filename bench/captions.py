"""Caption sets scored as the release's SBERT rows: embed each set's captions, write their pair scores
(cos+1)/2 in the release format, and correlate them with the human ratings."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from bench import report
from bench.evaluate import CorrelationRow, file_correlation
from bench.loaders import SIMILARITIES_SUFFIX, BenchDataError, GtPair, PairKey, ScoreFile, base_name, load_gt_pairs
from indexers.errors import ModelUnavailableError
from indexers.factory import create_indexer
from indexers.text import MINILM, pair_similarity, read_captions
from retrieval.core.registry import UnknownModelError


def score_caption_sets(captions_dirs: Sequence[Path], pairs: Path, out: Path, model: str, device: str | None,
                       note: Callable[[str], None]) -> list[CorrelationRow]:
    """Every caption set's pair scores written under ``out`` and its correlation rows; ``note`` hears what was
    written and what was skipped. Bad input raises BenchDataError (or OSError) before anything is written."""
    gt = load_gt_pairs(pairs)
    sets = [(folder, _read_captions(folder)) for folder in captions_dirs]  # bad folders fail before the model loads
    _check_out(out, len(sets))
    indexer = _text_indexer(model, device)  # once, for every set
    names = _set_names([folder for folder, _ in sets], indexer)
    rows: list[CorrelationRow] = []
    for name, (_, texts) in zip(names, sets, strict=False):
        rows += _score_set(name, texts, gt, indexer, _out_path(out, name, len(sets)), note)
    return rows


def _read_captions(folder: Path) -> dict[str, str]:
    texts = read_captions(folder)
    if not texts:
        raise BenchDataError(f"no .txt captions in {folder}")
    return texts


def _check_out(out: Path, n_sets: int) -> None:
    if n_sets > 1 and _is_file(out):
        raise BenchDataError(f"--out {out} is a file; with several --captions it is a folder, filled as "
                             f"OUT/<set>/<set>{SIMILARITIES_SUFFIX}")


def _is_file(out: Path) -> bool:
    return out.suffix == ".json" and not out.is_dir()


def _out_path(out: Path, name: str, n_sets: int) -> Path:
    """One set with a .json --out writes that file; otherwise the release layout under the --out folder."""
    if n_sets == 1 and _is_file(out):
        return out
    return out / name / f"{name}{SIMILARITIES_SUFFIX}"


def _text_indexer(spec: str, device: str | None):
    # a bare folder is read as sentence-transformers weights, whatever its config calls itself
    spec = f"text:{spec}" if Path(spec).expanduser().is_dir() else spec
    try:
        indexer = create_indexer(spec, device=device)
    except (UnknownModelError, ModelUnavailableError) as e:
        raise BenchDataError(str(e)) from None
    if indexer.kind != "text":
        raise BenchDataError(f"{spec} is a {indexer.kind} model; captions need a text model")
    return indexer


def _set_names(folders: list[Path], indexer) -> list[str]:
    names = [_caption_model_name(folder, indexer) for folder in folders]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        # the folder names the set and its output file, so two alike would overwrite each other
        raise BenchDataError(f"two caption folders are both named {twice[0]}; rename one")
    return names


def _caption_model_name(captions_dir: Path, indexer) -> str:
    """The caption folder names the row, as in the release; another text model is added to the name."""
    folder = captions_dir.resolve().name
    return folder if indexer.source == MINILM else f"{Path(indexer.source).name}_{folder}"


def stem(video: str) -> str:
    """`videos_trimmed/1754_007.mp4` -> `1754_007`, the caption file's name."""
    return Path(base_name(video)).stem


def _score_set(name: str, texts: dict[str, str], gt: dict[PairKey, GtPair], indexer, path: Path,
               note: Callable[[str], None]) -> list[CorrelationRow]:
    """Write one set's pair scores to ``path`` and return its correlation rows."""
    scores = caption_scores(name, gt, texts, indexer, note)
    path.parent.mkdir(parents=True, exist_ok=True)
    report.write_json(
        path, [{"video1": gt[k].video1, "video2": gt[k].video2, "similarity": s} for k, s in scores.items()]
    )
    note(f"wrote {path}: {len(scores)} pairs")
    return file_correlation(ScoreFile(path, name, None), scores, gt)


def caption_scores(name: str, gt: dict[PairKey, GtPair], texts: dict[str, str], indexer,
                   note: Callable[[str], None] = lambda _: None) -> dict[PairKey, float]:
    """(cos+1)/2 of the captions of every rated pair both of whose videos have one (the others: a warning)."""
    keys = [k for k in gt if stem(k[0]) in texts and stem(k[1]) in texts]
    if not keys:
        raise BenchDataError(f"{name}: no pair has captions for both videos")
    if len(keys) < len(gt):
        note(f"warning: {name}: {len(gt) - len(keys)} of {len(gt)} pairs lack a caption and are skipped")
    names = sorted({stem(v) for k in keys for v in k})
    vectors = indexer.embed_texts([texts[n] for n in names])
    row = {n: i for i, n in enumerate(names)}
    sims = pair_similarity(vectors[[row[stem(k[0])] for k in keys]], vectors[[row[stem(k[1])] for k in keys]])
    return {k: float(s) for k, s in zip(keys, sims, strict=False)}
