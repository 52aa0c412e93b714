"""The registered pair signals and how their ids name what they are computed from."""

import numpy as np
import pytest

from retrieval.core.scores import clipscore
from retrieval.core.signal_kinds import (
    CROSS_MODAL,
    SIGNALS,
    VQASCORE_MODEL,
    caption_signal,
    clipscore_id,
    clipscore_parts,
    is_vqascore,
    parse_signal,
    vqascore_id,
)


def test_both_cross_modal_signals_are_registry_members():
    assert {"clipscore", "vqascore"} <= set(SIGNALS.names())
    assert all(parse_signal(name).family == CROSS_MODAL for name in ("clipscore", "vqascore"))


@pytest.mark.parametrize("spec, name, model", [
    ("clipscore", "clipscore", None),
    ("clipscore:internvideo", "clipscore", "internvideo"),
    ("vqascore", "vqascore", VQASCORE_MODEL),
    ("vqascore:qwen2-vl", "vqascore", "qwen2-vl"),
    (" vqascore:/models/llava ", "vqascore", "/models/llava"),
])
def test_a_signal_spec_names_the_signal_and_its_model(spec, name, model):
    kind = parse_signal(spec)
    assert (kind.name, kind.model) == (name, model)


@pytest.mark.parametrize("spec", ["dinov2", "text#location", "clip:ViT-L-14/openai", "clipscores", ""])
def test_indexers_and_description_signals_are_not_pair_signals(spec):
    assert parse_signal(spec) is None


def test_ids_round_trip():
    video = "clip:ViT-L-14/openai"
    assert clipscore_parts(clipscore_id(video)) == (video, caption_signal(video)) == (video, f"{video}#caption")
    assert clipscore_parts(video) is None and clipscore_parts("clipscore") is None
    assert is_vqascore(vqascore_id("llava-onevision")) and not is_vqascore(clipscore_id(video))


def test_clipscore_is_the_references_mean_of_the_two_cross_cosines():
    rng = np.random.default_rng(0)
    v1, t1, v2, t2 = (x / np.linalg.norm(x) for x in rng.normal(size=(4, 16)))
    # the reference: (cos(v1, t2) + cos(v2, t1)) / 2, then (s + 1) / 2
    cos = lambda a, b: float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))  # noqa: E731
    assert clipscore(v1, t1, v2, t2) == pytest.approx(((cos(v1, t2) + cos(v2, t1)) / 2 + 1) / 2, abs=1e-12)
    assert clipscore(v1, t1, v2, t2) == pytest.approx(clipscore(v2, t2, v1, t1), abs=1e-12)  # symmetric
