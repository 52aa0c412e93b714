"""The random seed every tiny checkpoint is initialised from (the same weights on every run)."""

from __future__ import annotations


def seed_torch(seed: int = 0) -> None:
    import torch  # torch: only building a checkpoint needs it, so importing a builder module stays cheap

    torch.manual_seed(seed)
