"""The encoders section: frames/s of the image-text towers, tiny anywhere, the real shape only on a GPU."""

import pytest
import torch

from bench.perf.encoders import measure_encoder
from bench.perf.real_shape import NeedsCuda
from bench.perf.sections import SECTIONS


def test_a_tiny_tower_is_timed_on_frames_at_its_input_size(tmp_path):
    row = measure_encoder("siglip2", "tiny", tmp_path)
    assert (row.family, row.shape, row.device, row.dtype, row.frames) == ("siglip2", "tiny", "cpu", "float32", 8)
    assert row.seconds > 0 and row.frames_per_s == row.frames / row.seconds and row.gpu_gb is None
    page = "".join(SECTIONS["encoders"].page([row]))
    assert "| siglip2 | tiny | siglip2-tiny | cpu | float32 | 8 |" in page


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU builds the real shape")
def test_the_real_shape_is_refused_without_a_gpu(tmp_path):
    with pytest.raises(NeedsCuda):
        measure_encoder("pe", "7b", tmp_path)
