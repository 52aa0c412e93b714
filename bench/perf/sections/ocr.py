"""On-screen text reading: frames per second of the ocr indexer on the run's clips, decoded as an index run decodes
them for it (1 a second, short side 720), wall and CPU time apart (a shared machine's wall time includes waiting)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.section import Section, one_table, rounded

OCR_CLIPS = 4  # clips read (a full run); a smoke run reads one


@dataclass(frozen=True)
class OcrResult:
    """The ocr indexer on one clip: frames read, lines found, wall and CPU seconds of the reading alone."""

    clip: str
    size: str  # the frames' width x height as read
    frames: int
    lines: int
    seconds: float
    cpu_seconds: float
    provider: str  # ONNX Runtime's: "CPU" or "CUDA"

    @property
    def frames_per_s(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else 0.0

    @property
    def frames_per_cpu_s(self) -> float:
        return self.frames / self.cpu_seconds if self.cpu_seconds > 0 else 0.0


def run_ocr(config: PerfConfig, footage: Footage, progress: Progress) -> list[OcrResult]:
    """Each clip's frames read by the ocr indexer, timed."""
    from indexers.factory import create_indexer
    from retrieval.media.video_decoder import VideoDecoder

    reader = create_indexer("ocr")  # ONNX Runtime's CUDA provider where it has one, else the CPU
    decoder, rows = VideoDecoder(), []
    for clip in footage.clips[:1 if config.smoke else OCR_CLIPS]:
        progress(f"ocr: {clip.name}")
        _, units = decoder.sample(clip, reader.frame_spec)
        frames = [f for _, unit in units for f in unit.pixels]
        reader.read_frame(frames[0])  # the first call pays the runtime's one-time set-up
        wall, cpu = time.perf_counter(), time.process_time()
        lines = sum(len(found) for found in reader.read_frames(frames))
        rows.append(OcrResult(clip.name, f"{frames[0].shape[1]}x{frames[0].shape[0]}", len(frames), lines,
                              round(time.perf_counter() - wall, 3), round(time.process_time() - cpu, 3),
                              "CUDA" if reader.cuda else "CPU"))
    return rows


HEAD = ["clip", "size", "runtime", "frames", "lines", "seconds", "frames/s", "CPU seconds", "frames/CPU s"]


def _row(r: OcrResult) -> list:
    return [r.clip, r.size, r.provider, r.frames, r.lines, f"{r.seconds:.2f}", f"{r.frames_per_s:.2f}",
            f"{r.cpu_seconds:.2f}", f"{r.frames_per_cpu_s:.2f}"]


SECTION = Section(
    "ocr", "the ocr indexer on the clips (a smoke run: the first), read as an index run reads them: frames/s in "
           "wall and in CPU time, lines found",
    OcrResult, run_ocr, one_table("On-screen text (ocr)", HEAD, _row),
    derived=rounded(frames_per_s=3, frames_per_cpu_s=3))
