"""Which torch device a model runs on, chosen the same way for indexers and rerankers."""

from __future__ import annotations


def pick_device(device=None):
    """``device`` as a ``torch.device``; None means the GPU when there is one, else the CPU."""
    import torch  # optional heavy dependency: only commands that run a model pay for it

    if device is not None and str(device):
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
