"""The ConViS-Bench paper's published values (arXiv 2509.19245), x100, to print next to ours.

Rows are keyed by the folder name the released files use for that model. Concept order everywhere:
Main Action, Main Subjects, Main Objects, Location, Order of Actions.
"""

from __future__ import annotations

from dataclasses import dataclass

CONCEPTS = ("main-action", "main-subjects", "main-objects", "location", "order-of-actions")

CONDITIONED = "conditioned"  # one LMM answer per concept (Table 2)
GLOBAL = "global"  # one concept-agnostic score per pair, compared with every concept (Table 3)


@dataclass(frozen=True)
class PaperRow:
    name: str  # as the paper prints it
    folder: str  # model folder in the release
    values: dict[str, tuple[float, ...]]  # concept -> (rho, tau) or (R@1, P@1, F1@1)
    decimals: int  # precision the paper prints


def _row(name: str, folder: str, decimals: int, *cells: tuple[float, ...]) -> PaperRow:
    return PaperRow(name, folder, dict(zip(CONCEPTS, cells)), decimals)


# Table 2: concept-conditioned LMM answers, (rho, tau)
TABLE2 = {
    r.folder: r
    for r in (
        _row("mPLUG-Owl3-7B", "mPLUG-Owl3-7B-240728", 2,
             (30.64, 25.12), (20.59, 16.84), (28.53, 23.47), (21.00, 17.00), (23.11, 18.74)),
        _row("LLaVA-OV-0.5B", "LLaVA-OneVision-Qwen2-0.5B", 2,
             (1.95, 1.54), (-5.05, -3.91), (-4.00, -3.20), (5.66, 4.59), (1.30, 0.90)),
        _row("LLaVA-OV-7B", "LLaVA-OneVision-Qwen2-7B", 2,
             (51.76, 42.48), (48.43, 39.14), (58.64, 48.17), (58.94, 47.72), (41.02, 33.31)),
        _row("LLaVA-Video-7B", "LLaVA-NeXT-Video-7B", 2,
             (44.17, 36.53), (39.81, 32.81), (45.85, 37.96), (55.96, 46.33), (41.25, 34.05)),
        _row("Qwen2.5-VL-7B", "Qwen2.5-VL-7B-Instruct", 2,
             (37.88, 31.28), (17.53, 14.43), (26.97, 22.26), (23.63, 19.17), (23.85, 19.61)),
        _row("InternVL2.5-8B", "InternVL2_5-8B", 2,
             (28.70, 22.42), (28.60, 22.08), (25.06, 19.40), (19.64, 15.18), (18.15, 14.07)),
    )
}

# Table 3: global similarity, (rho, tau)
TABLE3 = {
    r.folder: r
    for r in (
        _row("DINOv2 (cosine)", "dinov2-large", 1,
             (33.3, 22.6), (40.9, 28.6), (37.4, 25.8), (57.4, 41.7), (34.6, 24.0)),
        _row("SBERT on mPLUG-Owl3 captions", "mPLUG-Owl3-7B-240728", 1,
             (52.1, 36.2), (45.5, 31.1), (55.1, 38.9), (28.4, 19.6), (49.9, 34.9)),
        _row("CLIPScore (CLIP ViT-L/14)", "clip-vit-large-patch14_mPLUG-Owl3-7B-240728", 1,
             (35.7, 24.6), (39.0, 27.0), (39.0, 27.1), (36.0, 24.9), (30.9, 21.1)),
        _row("VQAScore (LLaVA-OV)", "LLaVA-OneVision_mPLUG-Owl3-7B-240728", 1,
             (51.1, 36.1), (55.8, 39.6), (58.3, 41.4), (46.5, 32.3), (48.1, 33.9)),
    )
}

# Table 4: retrieval on the paper's 133-anchor split, (R@1, P@1, F1@1); no Order of Actions column
TABLE4 = {
    r.folder: r
    for r in (
        _row("LLaVA-OV-7B", "LLaVA-OneVision-Qwen2-7B", 1,
             (84.2, 54.8, 61.9), (82.0, 66.4, 68.7), (81.8, 58.8, 63.0), (80.1, 68.7, 69.3)),
    )
}

# Table 4's random-choice row, same split
RANDOM_CHOICE = _row("Random choice", "random", 1,
                     (25.0, 34.4, 27.8), (25.0, 44.9, 30.4), (25.0, 50.0, 31.5), (25.0, 36.6, 28.4))
RETRIEVAL_ANCHORS = 133  # size of the split those values are on


def correlation_row(kind: str, folder: str) -> PaperRow | None:
    """Table 2 row for a conditioned model, Table 3 row for a global signal."""
    return (TABLE2 if kind == CONDITIONED else TABLE3).get(folder)


def paper_retrieval(folder: str, concept: str) -> tuple[float, float, float] | None:
    row = TABLE4.get(folder)
    return row.values.get(concept) if row else None


def paper_random(concept: str) -> tuple[float, float, float] | None:
    return RANDOM_CHOICE.values.get(concept)


def as_printed(value: float, decimals: int) -> str:
    """How the reference prints a value: rounded to 2 decimals first, then formatted (e.g. 22.65 -> '22.6')."""
    return f"{round(value, 2):.{decimals}f}"
