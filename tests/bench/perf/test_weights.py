"""``python -m bench.perf.weights``: parameters counted on the meta device equal those of the model built for real."""

import open_clip

from bench.perf.weights import open_clip_parameters


def test_meta_device_counts_equal_a_built_models():
    model = open_clip.create_model("ViT-B-32", pretrained=None)
    built = (sum(p.numel() for p in model.visual.parameters()), sum(p.numel() for p in model.parameters()))
    assert open_clip_parameters("ViT-B-32") == built
