"""The local executor's share of the cores: torch threads beside the decode workers."""

from __future__ import annotations

import torch

from indexers.factory import create_indexer
from retrieval.pipeline.local import cpu_threads


def test_cpu_threads_leave_cores_to_decoders_and_restore_torchs_choice(tiny_models):
    ix = create_indexer(str(tiny_models["dinov2"]))
    before = torch.get_num_threads()
    with cpu_threads([ix], 1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    ix.device = torch.device("cuda")  # a GPU model leaves the CPU threads alone
    with cpu_threads([ix], 1):
        assert torch.get_num_threads() == before
