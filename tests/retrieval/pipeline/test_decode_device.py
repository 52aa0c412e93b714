"""``decode_device`` reaches the decode workers: a GPU decode where torchcodec can, else the CPU, said once."""

import pytest

from retrieval.api import Engine
from retrieval.core.sampling import as_spec
from retrieval.core.segmentation import ShotRule
from retrieval.media import frames
from retrieval.media.scan import FoundFile
from retrieval.pipeline.distribute import SerialDistributor
from retrieval.pipeline.plan import Plan
from retrieval.pipeline.run import _jobs
from retrieval.pipeline.settings import IndexSettings
from retrieval.pipeline.stages import DecodeJob, decode_job
from tests.paths import EXAMPLES

CUP = EXAMPLES / "cup.mp4"


def _found() -> FoundFile:
    stat = CUP.stat()
    return FoundFile(str(CUP), CUP.name, stat.st_size, stat.st_mtime)


def test_every_planned_job_carries_the_runs_decode_device_and_units():
    todo = Plan(new=[_found()], changed=[], missing_vectors=[], unchanged=[], deleted=[], failed=[], resegment=[])
    template = DecodeJob(FoundFile("", "", 0, 0.0), (), None, decode_device="cuda", shots=ShotRule("content"))
    jobs = _jobs(todo, {}, {"m:x": set()}, lambda ids: (as_spec(2),), template)
    assert [(job.file, job.decode.frame_specs) for job in jobs] == [(_found(), (as_spec(2),))]
    assert [(job.decode.decode_device, job.decode.shots) for job in jobs] == [("cuda", ShotRule("content"))]


def test_a_cuda_decode_without_a_gpu_falls_back_to_the_cpu_and_says_so(monkeypatch):
    pytest.importorskip("torchcodec")
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(frames, "_NOTICES", [])  # what earlier tests in this process said does not count
    on_cuda = decode_job(DecodeJob(_found(), (as_spec(4),), None, decode_device="cuda"))
    on_cpu = decode_job(DecodeJob(_found(), (as_spec(4),), None))
    # the same frames of the same units, whichever decoder read them
    assert [list(f.indices) for f in on_cuda.frames[as_spec(4)]] == [list(f.indices) for f in on_cpu.frames[as_spec(4)]]
    assert any(n.startswith("decode on cuda unavailable") and n.endswith("decoding on cpu")
               for n in frames.decode_notices())


def test_the_cli_refuses_an_unknown_decode_device_in_one_line(tmp_path):
    from typer.testing import CliRunner

    from retrieval.cli.app import app

    videos = tmp_path / "videos"
    videos.mkdir()
    (videos / "cup.mp4").write_bytes(CUP.read_bytes())
    result = CliRunner().invoke(app, ["index", str(videos), "--decode-device", "gpu0"])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "decode device must be cpu, cuda or cuda:N" in result.output and not (videos / ".convis").exists()


def test_what_decoding_says_in_a_worker_reaches_the_runs_report(tmp_path, tiny_models, video_folder, monkeypatch):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU decodes: there is no fallback to report")
    monkeypatch.setattr(frames, "_NOTICES", [])  # what earlier tests in this process said does not count
    engine = Engine(tmp_path / "index")
    report = engine.index(video_folder, [f"dinov2:{tiny_models['dinov2']}"], IndexSettings(decode_device="cuda"),
                          distributor=SerialDistributor())
    assert report.indexed == 4
    fallbacks = [n for n in report.notes if n.startswith("decode on cuda unavailable")]
    assert len(fallbacks) == 1 and fallbacks[0].endswith("decoding on cpu")  # said once, not once a file
