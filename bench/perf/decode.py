"""Decoding alone: ours (sampled frames, as a pipeline worker decodes) next to decoding every frame."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from PIL import Image

from bench.perf.decoders import clip_job, only_decoder
from bench.perf.measuring import clock, torch_thread_count
from bench.perf.sections.indexing import IndexingResult
from retrieval.core.sampling import as_spec, sample_frame_indices
from retrieval.media.frames import output_size
from retrieval.media.video_decoder import VideoDecoder
from retrieval.pipeline.stages import decode_job


def measure_decode(clips: Sequence[Path], decoder: str, frames_per_unit: int) -> IndexingResult:
    """Our decoding alone, one process, exactly as a pipeline worker runs it (probe, sample, hash)."""
    jobs = [clip_job(c, frames_per_unit) for c in clips]
    with only_decoder(decoder), clock() as timed:
        decoded = [decode_job(j) for j in jobs]
    frames = sum(_frames_of(d, frames_per_unit) for d in decoded)
    return IndexingResult("decode", "sampled", decoder, "-", len(clips), frames, timed["seconds"],
                          cpu_s=timed["cpu_s"], torch_threads=torch_thread_count())


def _frames_of(decoded, count: int) -> int:
    return sum(len(f.indices) for f in decoded.frames[as_spec(count)])


def measure_reference_decode(clips: Sequence[Path], decoder: str) -> IndexingResult:
    """Every frame decoded and held, as the paper's extraction reads each video."""
    with clock() as timed:
        decoded = sum(len(every_frame(c, decoder)) for c in clips)
    return IndexingResult("decode", "every frame", decoder, "-", len(clips), decoded, timed["seconds"],
                          "full-size RGB, all frames held", cpu_s=timed["cpu_s"], torch_threads=torch_thread_count())


def measure_streamed_decode(clips: Sequence[Path], decoder: str, frames_per_unit: int) -> IndexingResult:
    """Every frame decoded on one thread, only the sampled ones kept: the floor for decoding everything."""
    with clock() as timed:
        results = [streamed_frames(c, decoder, frames_per_unit) for c in clips]
    frames, decoded = sum(len(r[0]) for r in results), sum(r[1] for r in results)
    return IndexingResult("decode", "every frame, streamed", decoder, "-", len(clips), frames, timed["seconds"],
                          f"{decoded} stream frames decoded, one thread", cpu_s=timed["cpu_s"],
                          torch_threads=torch_thread_count())


def every_frame(path: Path, decoder: str) -> np.ndarray:
    """Every frame of the stream as full-size RGB, all held at once: how the paper's feature
    extraction reads a video (decord ``VideoReader(path, ctx=cpu(0)).get_batch(range(len))``, its
    default threads).  PyAV, which the paper does not use, decodes every frame the same way."""
    if decoder == "decord":
        import decord  # decord: installed on x86-64 Linux only

        decord.logging.set_level(decord.logging.QUIET)  # as our decoder does: damaged slices are not news
        reader = decord.VideoReader(str(path), ctx=decord.cpu(0))
        return reader.get_batch(range(len(reader))).asnumpy()
    return np.stack(list(_every_frame_pyav(path)))


def streamed_frames(path: Path, decoder: str, frames_per_unit: int) -> tuple[np.ndarray, int]:
    """The cheapest way to decode every frame: one thread, frame by frame, keeping only the sampled ones.

    They are resized to our output size, so this and our sampled decoding hand the model
    identical inputs.  Returns (frames, number of frames decoded).
    """
    info = VideoDecoder(backends=[decoder]).backends[0].probe(Path(path))
    wanted = sample_frame_indices(info.frame_count, info.fps, frames_per_unit)
    every = _every_frame_decord if decoder == "decord" else _every_frame_pyav
    kept, decoded, keep = {}, 0, set(wanted)
    for number, rgb in enumerate(every(path)):
        decoded += 1
        if number in keep:
            kept[number] = rgb
    last = kept[max(kept)]
    size = output_size(info.width, info.height)
    return np.stack([_resize(kept.get(i, last), size) for i in wanted]), decoded


def _every_frame_decord(path: Path):
    import decord  # decord: installed on x86-64 Linux only

    reader = decord.VideoReader(str(path), ctx=decord.cpu(0), num_threads=1)
    for _ in range(len(reader)):
        yield reader.next().asnumpy()


def _every_frame_pyav(path: Path):
    import av  # av: ~15 MB resident; only processes that handle video load it, so search rows' peak RSS stays clean

    with av.open(str(path)) as container:
        for frame in container.decode(container.streams.video[0]):
            yield frame.to_ndarray(format="rgb24")


def _resize(rgb: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    if (rgb.shape[1], rgb.shape[0]) == size:
        return rgb
    return np.asarray(Image.fromarray(rgb).resize(size, Image.BILINEAR))


def time_sampled_decoding(paths: Sequence[Path], decoder: str, frames_per_unit: int, segment_seconds: float | None,
                          threads: int = 1) -> dict:
    """One backend's sampled decoding of ``paths`` (decoder-scaled, as ``convis index`` reads), in this process:
    wall and CPU seconds, frames, and the seconds making the backend took (torchcodec's: importing torch).
    ``threads``: PyAV's and torchcodec's FFmpeg threads (0: FFmpeg chooses); decord decodes on one."""
    import resource
    import time

    from retrieval.media import video_decoder

    factories = {f.name: f for f in video_decoder._available_backends()}
    if decoder not in factories:
        raise ValueError(f"unknown decoder {decoder!r}; known: {', '.join(factories)}")
    started = time.perf_counter()
    backend = factories[decoder](threads=threads) if decoder != "decord" else factories[decoder]()
    made = time.perf_counter() - started
    reader = VideoDecoder(backends=["pyav"])
    reader.backends = [backend]  # the one made above, already timed
    count = 0
    with clock() as timed:
        for path in paths:
            _, units = reader.sample(path, frames_per_unit, segment_seconds)
            count += sum(len(f.indices) for _, f in units)
    return {"decoder": decoder, "threads": threads, "files": len(paths), "frames": count, "make_s": round(made, 2),
            "wall_s": round(timed["seconds"], 2), "cpu_s": round(timed["cpu_s"], 2),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m bench.perf.decode PATH... --decoder NAME [--threads N] [--frames 10] [--segment 10]``: one line
    of JSON; run each decoder in a fresh process (torchcodec's torch import stays in the process)."""
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m bench.perf.decode")
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--decoder", required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--frames", type=int, default=10, help="frames per unit (1 fps, then uniform)")
    parser.add_argument("--segment", type=float, default=None, help="unit length in seconds (default: whole file)")
    args = parser.parse_args(argv)
    print(json.dumps(time_sampled_decoding(args.paths, args.decoder, args.frames, args.segment, args.threads)))


if __name__ == "__main__":
    main()
