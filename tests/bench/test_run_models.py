"""`convis bench run`'s video LMMs: each spec loaded once and shared by the captioner, VQAScore and the reranker (in
the family's paper precision under --protocol paper), and their cached answers kept apart by precision and batch
size, a batch lowered for lack of GPU memory included."""

import json
import shutil

import pytest
import torch
from transformers import LlavaOnevisionForConditionalGeneration
from typer.testing import CliRunner

import rerankers.hf
from bench.run import BenchRun, load_dataset
from bench.tiny.dataset import CLIPS
from bench.tiny.vlm import build_llava_onevision
from rerankers.llava import LlavaReranker
from retrieval.cli.app import app
from tests.bench.few_clips import FEW_CLIPS


@pytest.fixture(scope="module")
def dataset(few_clips):
    """The three-clip folder: these runs test how the LMM is loaded and asked, not the numbers."""
    return few_clips


@pytest.fixture(scope="module")
def llava(tmp_path_factory):
    return build_llava_onevision(tmp_path_factory.mktemp("lmm") / "llava")


@pytest.fixture(autouse=True)
def short(monkeypatch):
    # two frames a video and four-token captions keep a tiny model's run short; the rules are otherwise the family's
    monkeypatch.setattr(LlavaReranker, "frames_per_video", 2)
    monkeypatch.setattr(rerankers.hf, "GENERATE_TOKENS", 4)


def builds(monkeypatch) -> list[tuple[LlavaReranker, dict]]:
    """Every LLaVA model loaded from here on, with what it was built with."""
    built = []
    init = LlavaReranker.__init__

    def recorded(self, source, **kwargs):
        init(self, source, **kwargs)
        built.append((self, kwargs))

    monkeypatch.setattr(LlavaReranker, "__init__", recorded)
    return built


def test_a_paper_run_loads_one_lmm_once_in_its_paper_precision_for_every_role(dataset, llava, tmp_path,
                                                                              monkeypatch):
    built = builds(monkeypatch)
    out = tmp_path / "out"
    # VQAScore asks the captioner; the reranker's expected answers keep its folder apart from the captions' SBERT one
    result = CliRunner().invoke(app, ["bench", "run", "--dataset", str(dataset), "--out", str(out), "-i",
                                      "efficientnet-lite0", "--protocol", "paper", "--captioner", str(llava),
                                      "--reranker", str(llava), "--mode", "expected", "--json", "--workers", "1"])
    assert result.exit_code == 0, result.output
    ((model, kwargs),) = built  # one model for the captions, VQAScore and the concept scores
    assert (kwargs["dtype"], kwargs["batch_size"]) == ("fp16", 1)  # LLaVA's paper precision, one request a pass
    # a CPU runs fp16 in fp32, and the folders say so; a GPU runs the paper's fp16 and keeps the plain name
    ran = "" if model.dtype == torch.float16 else "-fp32"
    captions = f"llava-onevision-llava{ran}"
    assert {p.name: len(list(p.glob("*.txt"))) for p in (out / "captions").iterdir()} == {captions: len(FEW_CLIPS)}
    models = {r["model"] for r in json.loads(result.stdout)["results"] if "rho" in r}
    assert {f"{captions}_{captions}", f"llava-onevision-llava-expected{ran}"} <= models  # VQAScore, the reranker


def captioned(dataset, tmp_path):
    """A copy of the dataset with a caption file a video, so VQAScore needs no captioner."""
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    folder = copy / "captions" / "files"
    folder.mkdir(parents=True)
    for name in FEW_CLIPS:
        (folder / f"{name}.txt").write_text(f"a video of {name.replace('_', ' ')} in the {CLIPS[name]}\n")
    return load_dataset(copy)


def vqascore(data, out, llava) -> tuple[str, int, list[str]]:
    """A fast run computing VQAScore alone: (its folder, the questions asked of the model, the run's notes)."""
    notes = []
    result = BenchRun(data, out, ["efficientnet-lite0"], None, None, workers=1, note=notes.append,
                      vqascore=str(llava)).run()
    (folder,) = {f.model for f in result.files if f.model.startswith("llava-onevision")}
    (asked,) = [int(n.split(": ")[1].split()[0]) for n in notes if n.startswith("VQAScore (")]
    return folder, asked, notes


def test_vqascore_answers_of_another_batch_size_are_never_read_back(dataset, llava, tmp_path, monkeypatch):
    data, out = captioned(dataset, tmp_path), tmp_path / "out"
    folder, asked, _ = vqascore(data, out, llava)
    assert folder.endswith("-b4_files") and asked > 0  # the family's 4 a forward pass
    assert vqascore(data, out, llava)[1] == 0  # the same settings: every answer from the cache
    with monkeypatch.context() as mp:
        mp.setattr(LlavaReranker, "batch_size", 2)
        other, again, _ = vqascore(data, out, llava)
    assert other == folder.replace("-b4_", "-b2_") and again == asked  # rows batched otherwise answer otherwise


def out_of_memory_above(rows: int, monkeypatch) -> list[int]:
    """Make every LLaVA generate run out of GPU memory on batches of more than ``rows``; returns the sizes tried
    (tests/rerankers/test_runtime.py's fail_above, for the models a run builds)."""
    tried = []
    generate = LlavaOnevisionForConditionalGeneration.generate

    def limited(self, *args, **kwargs):
        tried.append(kwargs["input_ids"].shape[0])
        if tried[-1] > rows:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return generate(self, *args, **kwargs)

    monkeypatch.setattr(LlavaOnevisionForConditionalGeneration, "generate", limited)
    return tried


def test_answers_asked_after_the_batch_was_halved_are_not_cached_as_the_requested_batch(dataset, llava, tmp_path,
                                                                                       monkeypatch):
    data, out = captioned(dataset, tmp_path), tmp_path / "out"
    with monkeypatch.context() as mp:
        tried = out_of_memory_above(2, mp)
        folder, asked, notes = vqascore(data, out, llava)
    assert tried[:3] == [4, 2, 2] and max(tried[3:]) == 2  # halved once, then two a forward pass
    assert folder.endswith("-b4_files")  # named by the batch it was asked with ...
    assert any(n.startswith(f"{folder.removesuffix('_files')}: out of GPU memory at 4") and "not cached" in n
               for n in notes)  # ... and the notes say what became of it
    # nothing it answered two a pass stands in for four a pass: a run with room for four asks everything again
    assert vqascore(data, out, llava)[1] == asked
