"""The describe pass's mapper on Ray: the captioner runs in actors, one GPU each when the cluster has GPUs.

The driver never loads the LMM: it asks one actor who the model is (id, revision, frames: the key its
answers are stored under), plans the units against the catalog with that key, sends the actors the
units in batches of a few (decoding happens in the actor, beside the model), and writes each unit's
answers as they come back, one transaction a unit, as a local run does.  A unit an actor could not
describe comes back with its reason and is left for a later run.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from retrieval.core.sampling import FrameSpec
from retrieval.lmm.captioning import Described, Work, describe_units

DESCRIBE_BATCH = 4  # units per actor call: amortises the call, small enough to spread over the actors


@dataclass(frozen=True)
class RemoteModel:
    """Who the actors' captioner is: what the driver keys its answers by (it never loads the model)."""

    model_id: str
    revision: str
    describe_version: str
    frame_spec: FrameSpec
    caption_tokens: int | None


class _Captioner:
    """A Ray actor holding the captioner; describes a few units per call."""

    def __init__(self, spec: str, device: str | None, trust_remote_code: bool, threads: int, protocol: str):
        import torch  # torch: imported by the actors, which hold the model

        from rerankers.factory import create_for_protocol
        from retrieval.media.video_decoder import VideoDecoder

        torch.set_num_threads(max(1, threads))
        extra = {"trust_remote_code": True} if trust_remote_code else {}
        # built as a local run builds it for the protocol (the paper's: its family's paper precision)
        self.model = create_for_protocol(spec, protocol, device, **extra).captioner(protocol)
        self.decoder = VideoDecoder()

    def identity(self) -> RemoteModel:
        m = self.model
        return RemoteModel(m.model_id, m.revision, m.describe_version, m.frame_spec, m.caption_tokens)

    def describe(self, root: str, work: Work) -> list[Described]:
        return describe_units(self.model, self.decoder, Path(root), work)


@contextmanager
def ray_captioner(spec: str, root: Path, device: str | None = None, trust_remote_code: bool = False,
                  actors: int | None = None, cpus: float = 1.0, batch: int = DESCRIBE_BATCH, protocol: str = "fast"
                  ) -> Iterator[tuple[RemoteModel, callable]]:
    """(the captioner's identity, a mapper asking the actors) on the Ray session already joined; the actors
    go when the block ends. ``actors``: default one per GPU (a GPU each), else one on ``cpus`` CPUs; ``protocol``:
    the index's, which says how the actors caption (``Reranker.captioner``)."""
    import ray  # ray: optional, only the --ray path pays for importing it
    from ray.util import ActorPool

    gpus = int(ray.cluster_resources().get("GPU", 0)) if not (device or "").startswith("cpu") else 0
    remote = ray.remote(num_gpus=1 if gpus else 0, num_cpus=cpus)(_Captioner)
    pool = [remote.remote(spec, device, trust_remote_code, max(1, int(cpus)), protocol)
            for _ in range(actors or max(1, gpus))]
    try:
        identity = ray.get(pool[0].identity.remote())

        def mapper(work: Work) -> Iterator[Described]:
            batches = [work[i:i + batch] for i in range(0, len(work), batch)]
            for done in ActorPool(pool).map_unordered(lambda a, b: a.describe.remote(str(root), b), batches):
                yield from done

        yield identity, mapper
    finally:
        for actor in pool:
            ray.kill(actor)
