"""The torchcodec backend: FFmpeg's libraries through torchcodec, on the CPU or on an NVIDIA GPU (NVDEC).

torchcodec (and so torch) is imported only when a ``TorchCodecBackend`` is made: importing this module, or
``retrieval.media.video_decoder``, imports neither.  torchcodec needs the FFmpeg shared libraries of the system
(Debian's ``ffmpeg`` package, ``make ffmpeg``); without them it cannot load, and the backend is unavailable
(``BackendUnavailable``, an ``ImportError``: the decoder goes on with the others and says why, once).

Frame numbers are positions in presentation order, found by torchcodec's exact seek mode (a scan of the
packets when the file is opened), as PyAV finds them from the packets' times: on the example clips the
full-size frames are pixel-identical to PyAV's and decord's.  Decoder-scaled frames are decoded at full
size a few at a time and scaled at once (``scale``: bilinear, antialiased, from the RGB picture, on the
decoding device) to the same size as the others'; PyAV and decord scale the YUV picture before converting
it, so those differ from theirs by about one grey level on average (as decord's and PyAV's differ from
each other by a fifth of one).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

import numpy as np

from retrieval.media.frames import BackendUnavailable, DecodeError, Frames, VideoInfo, notice, reorder

# frames decoded at full size at a time, then resized (a 4K RGB frame is 25 MB)
CHUNK = 8


def _load_torchcodec():
    """``torchcodec.decoders``; ModuleNotFoundError when torchcodec is not installed, BackendUnavailable when
    it is but its libraries do not load."""
    try:
        import torchcodec.decoders as decoders
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] == "torchcodec":
            raise
        raise BackendUnavailable(f"torchcodec cannot load: {_first_line(exc)}") from None
    except Exception as exc:  # torchcodec raises RuntimeError (or OSError) when no FFmpeg library loads
        raise BackendUnavailable(f"torchcodec cannot load its FFmpeg libraries: {_first_line(exc)}") from None
    return decoders


def cuda_unavailable_reason(device: str) -> str | None:
    """Why decoding cannot run on ``device`` (a CUDA device), or None when it can be tried."""
    import torch

    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    index = torch.device(device).index
    if index is not None and index >= torch.cuda.device_count():
        return f"no device {device} ({torch.cuda.device_count()} CUDA device(s))"
    return None


class TorchCodecBackend:
    """Decodes with ``torchcodec.decoders.VideoDecoder`` (exact seek mode), on ``device`` ("cpu", "cuda",
    "cuda:N"; None: the CPU).  ``threads``: FFmpeg's decoding threads on the CPU (1, as decord's: a decode
    worker is one of several processes; 0 lets FFmpeg choose).

    On a CUDA device that cannot be used (no GPU, NVDEC failing) it decodes on the CPU and says so once:
    "decode on cuda unavailable (<reason>); decoding on cpu".
    """

    name = "torchcodec"

    def __init__(self, device: str | None = None, threads: int = 1) -> None:
        self._decoders = _load_torchcodec()  # fail early so the caller can fall back
        self.threads = threads
        self.device = "cpu"
        if device and device != "cpu":
            if not device.startswith("cuda"):
                raise ValueError(f"decode device must be cpu or cuda[:N], not {device!r}")
            reason = cuda_unavailable_reason(device)
            if reason is None:
                self.device = device
            else:
                _cpu_fallback(device, reason)

    def _open(self, path: Path):
        try:
            return self._decoders.VideoDecoder(str(path), dimension_order="NHWC", seek_mode="exact",
                                               num_ffmpeg_threads=self.threads, device=self.device)
        except Exception as exc:
            raise DecodeError(_reason(exc, path)) from None

    def probe(self, path: Path) -> VideoInfo:
        meta = self._on_cpu_if_cuda_fails(path, lambda: self._open(path).metadata)
        count = int(meta.num_frames_from_header or 0) or int(meta.num_frames or 0)
        fps = float(meta.average_fps_from_header or meta.average_fps or 0) or 25.0
        duration = float(meta.duration_seconds_from_header or meta.duration_seconds or 0)
        if count <= 0 or not meta.num_frames:
            raise DecodeError("video stream has no frames")
        # torchcodec turns the picture as the container asks, and reports the upright size: nothing is left to turn
        return VideoInfo(count, fps, duration or count / fps, int(meta.width), int(meta.height), self.name,
                         codec=str(getattr(meta, "codec", "") or ""))

    def read(self, path: Path, info: VideoInfo, indices: Sequence[int], resize) -> Frames:
        return self._on_cpu_if_cuda_fails(path, lambda: self._read(path, info, indices, resize))

    def _read(self, path: Path, info: VideoInfo, indices: Sequence[int], resize) -> Frames:
        unique = sorted(set(indices))
        size = resize.decoder_size(info.width, info.height) if resize.in_decoder else None
        decoder = self._open(path)
        self._check_cuda(decoder)
        last = len(decoder) - 1
        if last < 0:
            raise DecodeError("no frame could be decoded")
        # a frame number past the stream's end (a header's count above the frames found) repeats the last frame
        wanted = [min(i, last) for i in unique]
        origin = float(decoder.metadata.begin_stream_seconds_from_header or 0.0)
        pixels, times = [], []
        for start in range(0, len(wanted), CHUNK):
            try:
                batch = decoder.get_frames_at(wanted[start:start + CHUNK])
            except Exception as exc:
                raise DecodeError(_reason(exc, path)) from None
            pixels.append(self._to_host(batch.data, size, resize))
            times.append(batch.pts_seconds.cpu().double().numpy() - origin)
        return reorder(unique, np.concatenate(pixels), np.concatenate(times), indices)

    def _to_host(self, data, size: tuple[int, int] | None, resize) -> np.ndarray:
        """(N, H, W, 3) uint8 numpy at the policy's size from full-size frames on the decoding device."""
        if size is None:
            return np.stack([resize.apply(frame) for frame in data.cpu().numpy()])
        if (data.shape[2], data.shape[1]) != size:
            data = scale(data, size)
        return np.ascontiguousarray(data.cpu().numpy())

    def _check_cuda(self, decoder) -> None:
        """torchcodec decodes on the CPU itself where NVDEC cannot (no libnvcuvid, an unsupported codec)."""
        if self.device == "cpu":
            return
        fallback = decoder.cpu_fallback
        if fallback:
            notice(f"decode on cuda fell back to cpu inside torchcodec ({_first_line(fallback)})")

    def _on_cpu_if_cuda_fails(self, path: Path, work):
        """``work()`` on this backend's device; where that is a GPU and it fails while the CPU succeeds, the
        GPU is given up for good (said once) and the CPU's result returned."""
        if self.device == "cpu":
            return work()
        try:
            return work()
        except Exception as exc:
            on_gpu = exc  # kept past the except block
        device, self.device = self.device, "cpu"
        try:
            result = work()
        except Exception:
            self.device = device  # the file is at fault, not the GPU: the CPU's words say what is wrong with it
            raise
        _cpu_fallback(device, _first_line(on_gpu))
        return result


def scale(data, size: tuple[int, int]):
    """(N, H, W, 3) uint8 frames scaled to ``size`` (width, height): bilinear, antialiased, where they are.

    torchcodec's own ``Resize`` transform does the same in the decoder, on the CPU only, and cost 14 ms a
    720p frame here against torch's 0.9 ms; on a GPU torch scales floats (its uint8 kernel is the CPU's).
    """
    import torch

    nchw = data.permute(0, 3, 1, 2)
    if data.device.type == "cpu":
        small = torch.nn.functional.interpolate(nchw, size=(size[1], size[0]), mode="bilinear", antialias=True)
    else:
        small = torch.nn.functional.interpolate(nchw.float(), size=(size[1], size[0]), mode="bilinear",
                                                antialias=True).round_().clamp_(0, 255).to(torch.uint8)
    return small.permute(0, 2, 3, 1)


def _cpu_fallback(device: str, reason: str) -> None:
    notice(f"decode on {device.split(':')[0]} unavailable ({reason}); decoding on cpu")


# torchcodec's messages start "SingleStreamDecoder, /path/to/SingleStreamDecoder.cpp:41, "
_NATIVE_PREFIX = re.compile(r"^\w+, \S+:\d+, ")


def _reason(exc: BaseException, path: Path) -> str:
    text = _NATIVE_PREFIX.sub("", _first_line(exc)).replace(f": {path}", "").replace(str(path), "the file")
    return text or type(exc).__name__


def _first_line(exc: object) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0][:300] if lines else type(exc).__name__
