"""Decoding every frame (the paper's way) and ours see the same footage."""

import numpy as np

from bench.perf.decode import every_frame, streamed_frames
from bench.perf.decoders import clip_job, only_decoder
from bench.perf.footage import make_clips
from retrieval.core.sampling import as_spec
from retrieval.pipeline.stages import decode_job


def test_reference_way_and_ours_hand_the_model_the_same_frames(tmp_path):
    clip = make_clips(tmp_path, count=1)[0]
    for decoder in ("decord", "pyav"):
        with only_decoder(decoder):
            ours = decode_job(clip_job(clip, 4)).frames[as_spec(4)][0]
        theirs, decoded = streamed_frames(clip, decoder, 4)
        assert decoded == 40 and theirs.shape == ours.pixels.shape
        assert np.abs(theirs.astype(int) - ours.pixels.astype(int)).mean() < 8  # lossy resize paths differ
        every = every_frame(clip, decoder)
        assert every.shape == (40, 96, 160, 3)
        assert np.abs(every[ours.indices[1]].mean() - ours.pixels[1].mean()) < 4  # the same frame, full size
