"""`convis bench run --reranker`: folder names that say how the scores were made, and the paper's way of asking
(greedy, one pair a forward pass, the family's paper precision, the reference's reading of the answer)."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import rerankers.factory
from bench import paper
from bench.loaders import load_pair_scores
from bench.run import PAPER_FOLDERS, PAPER_VQA_FOLDERS, BenchRun, load_dataset, model_folder, reranker_suffix
from bench.tiny.vlm import build_qwen_vl
from rerankers.base import RERANKERS, NextToken, PairScore
from rerankers.factory import available_rerankers, create_reranker
from rerankers.prompts.similarity import parse_score, reference_score
from rerankers.qwen import QwenReranker
from retrieval.cli.app import app

PAPER_QWEN = "Qwen/Qwen2.5-VL-7B-Instruct"  # weights the paper ran: Table 2's Qwen2.5-VL-7B row


@pytest.fixture(scope="module")
def dataset(few_clips):
    """The three-clip folder: these runs test how the reranker is asked and named, not the numbers."""
    return few_clips


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    """A tiny Qwen2.5-VL checkpoint, the runs' reranker."""
    return build_qwen_vl(tmp_path_factory.mktemp("qwen") / "qwen", model_type="qwen2_5_vl")


def run(*args):
    result = CliRunner().invoke(app, ["bench", "run", *map(str, args), "--json", "--workers", "1"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


QWEN_FORWARD = QwenReranker._next_tokens


class Spy:
    """Wraps the factory's create_reranker: records what every build was asked for, names the built (tiny) model as
    the paper's Qwen2.5-VL-7B weights (they cannot be downloaded here); and Qwen's forward pass: records every
    forward pass's batch size and makes the model answer "7" for Location (the model still runs; only its greedy
    text is replaced), for every Qwen model, the built one and any asked another way with its weights."""

    def __init__(self, mp):
        self.kwargs, self.batches, self.models = [], [], []

        def next_tokens(model, clips, concept_words):
            self.batches.append(len(clips))
            tokens = QWEN_FORWARD(model, clips, concept_words)
            return [NextToken(t.answer_logits, "7") if concept_words == "Location" else t for t in tokens]

        mp.setattr(rerankers.factory, "create_reranker", self.create)
        mp.setattr(QwenReranker, "_next_tokens", next_tokens)

    def create(self, spec, **kwargs):
        self.kwargs.append(kwargs)
        model = create_reranker(spec, **kwargs)
        model.source = PAPER_QWEN
        self.models.append(model)
        return model


def conditioned(data: dict) -> dict:
    return {(r["model"], r["concept"]): r for r in data["results"] if "rho" in r and r["kind"] == "conditioned"}


@pytest.fixture(scope="module")
def paper_runs(dataset, qwen, tmp_path_factory):
    """Two --protocol paper runs into one folder with the spy: first with every default, then with
    --rerank-batch 3; the family's paper precision is fp32 for the occasion (any machine runs it), and its own
    frame count 2 (a default count keeps the paper's name; 2 keeps the test short)."""
    out, runs = tmp_path_factory.mktemp("labels") / "out", []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(QwenReranker, "paper_dtype", "fp32", raising=False)
        mp.setattr(QwenReranker, "frames_per_video", 2)
        for extra in ([], ["--rerank-batch", 3]):
            spy = Spy(mp)
            data = run("--dataset", dataset, "--out", out, "-i", "efficientnet-lite0", "--protocol", "paper",
                       "--reranker", qwen, *extra)
            runs.append((spy, data))
    return out, runs


def test_paper_protocol_asks_one_pair_at_a_time_greedy_in_the_paper_precision(paper_runs):
    out, [(spy, data), _] = paper_runs
    assert spy.batches and set(spy.batches) == {1}  # the reference's one pair a forward pass
    assert spy.kwargs[0]["dtype"] == "fp32" and spy.kwargs[0]["batch_size"] == 1  # the family's paper_dtype
    rows = conditioned(data)
    # greedy, one order, paper precision, batch 1: the paper's name
    assert {m for m, _ in rows} == {"Qwen2.5-VL-7B-Instruct"} and len(rows) == 5
    assert {Path(r["path"]).parent.name for r in rows.values()} == {"Qwen2.5-VL-7B-Instruct"}
    assert all(r["paper_rho"] is not None for r in rows.values())  # ... so, and only so, beside the paper's value


def test_paper_protocol_writes_the_references_reading_of_an_answer_over_five(paper_runs, dataset):
    out, [(spy, _), _] = paper_runs
    folder = out / "computed_conditioned_similarities"
    location = load_pair_scores(folder / "Location" / "Qwen2.5-VL-7B-Instruct"
                                / "Qwen2.5-VL-7B-Instruct_Location_similarities.json")
    assert set(location.values()) == {7.0}  # the reference stores float("7"); 1-5 parsing would write 0.0
    action = load_pair_scores(folder / "Main_Action" / "Qwen2.5-VL-7B-Instruct"
                              / "Qwen2.5-VL-7B-Instruct_Main_Action_similarities.json")
    assert len(action) == len(location) and all(v == int(v) and 0 <= v <= 9 for v in action.values())
    ranking = json.loads((out / "computed_retrieval_scores" / "Location" / "Qwen2.5-VL-7B-Instruct"
                          / "Qwen2.5-VL-7B-Instruct_Location_ranking.json").read_text())
    assert {s for cands in ranking.values() for s in cands.values()} == {7.0}


def test_a_batch_over_one_is_named_and_never_served_another_batch_size_s_answers(paper_runs):
    out, [_, (spy, data)] = paper_runs
    # the same pairs, concepts and mode as the first run: its cached answers are batch 1's, so all are asked again
    assert max(spy.batches) == 3 and sum(spy.batches) > 0
    assert len(spy.models) == 1 and spy.kwargs[0]["batch_size"] == 1  # built once, as the paper's; asked 3 a pass
    rows = conditioned(data)
    assert {m for m, _ in rows} == {"Qwen2.5-VL-7B-Instruct-b3"}
    assert all(r["paper_rho"] is None and r["paper_delta_rho"] is None for r in rows.values())
    assert (out / "computed_conditioned_similarities" / "Main_Action" / "Qwen2.5-VL-7B-Instruct-b3").is_dir()


def test_expected_symmetric_and_an_unknown_precision_are_named_and_get_no_paper_value(dataset, qwen, tmp_path,
                                                                                        monkeypatch):
    monkeypatch.setattr(QwenReranker, "paper_dtype", None, raising=False)  # a family that names no paper precision
    spy = Spy(monkeypatch)
    data = run("--dataset", dataset, "--out", tmp_path / "out", "-i", "efficientnet-lite0", "--protocol", "paper",
               "--reranker", qwen, "--mode", "expected", "--symmetric", "--frames", "2")
    assert spy.kwargs[0]["dtype"] == "auto"  # the machine's own choice: fp32 on a CPU, bf16 on most GPUs
    ran = {"torch.float32": "fp32", "torch.bfloat16": "bf16", "torch.float16": "fp16"}[str(spy.models[0].dtype)]
    rows = conditioned(data)
    assert {m for m, _ in rows} == {f"Qwen2.5-VL-7B-Instruct-expected-sym-{ran}-f2"}
    assert all(r["paper_rho"] is None for r in rows.values())


def test_reranker_suffix_names_every_difference_from_the_papers_way_of_asking():
    import torch

    folder = lambda settings: model_folder(RERANKERS, "qwen2.5-vl", PAPER_QWEN, 8, 8, "", settings)  # noqa: E731
    assert folder(reranker_suffix("greedy", False, torch.bfloat16, "bf16", 1)) == "Qwen2.5-VL-7B-Instruct"
    assert folder(reranker_suffix("expected", False, torch.bfloat16, "bf16", 1)) == "Qwen2.5-VL-7B-Instruct-expected"
    assert folder(reranker_suffix("greedy", True, torch.bfloat16, "bf16", 1)) == "Qwen2.5-VL-7B-Instruct-sym"
    assert folder(reranker_suffix("greedy", False, torch.float32, "bf16", 1)) == "Qwen2.5-VL-7B-Instruct-fp32"
    assert folder(reranker_suffix("greedy", False, torch.float16, "fp16", 1)) == "Qwen2.5-VL-7B-Instruct"
    # a family that names no paper precision cannot be told to run the paper's: its precision is named
    assert folder(reranker_suffix("greedy", False, torch.bfloat16, None, 1)) == "Qwen2.5-VL-7B-Instruct-bf16"
    assert folder(reranker_suffix("greedy", False, torch.bfloat16, "bf16", 4)) == "Qwen2.5-VL-7B-Instruct-b4"
    assert (model_folder(RERANKERS, "qwen2.5-vl", PAPER_QWEN, 4, 8, "-fast",
                         reranker_suffix("expected", True, torch.float32, "bf16", 4))
            == "Qwen2.5-VL-7B-Instruct-fast-expected-sym-fp32-b4-f4")
    # a model the paper has no row for keeps its own name, and says how it was asked all the same
    assert (model_folder(RERANKERS, "qwen2-vl", "Qwen/Qwen2-VL-7B-Instruct", 8, 8, "-fast",
                         reranker_suffix("expected", False, torch.bfloat16, "bf16", 4)) == "qwen2-vl-expected-b4")


def test_transformers_ports_and_other_checkpoints_never_take_a_papers_row():
    available_rerankers()
    port = model_folder(RERANKERS, "llava-onevision", "llava-hf/llava-onevision-qwen2-7b-ov-hf", 16, 16)
    assert port == "LLaVA-OneVision-Qwen2-7B-HF"  # the release's own run of this port, not Table 2's row
    assert model_folder(RERANKERS, "internvl2.5", "OpenGVLab/InternVL2_5-8B-MPO-hf", 16, 16) == "InternVL2_5-8B-MPO-HF"
    ports = {hub: name for hub, name in {**PAPER_FOLDERS, **PAPER_VQA_FOLDERS}.items()
             if hub.startswith("llava-hf/") or hub.lower().endswith("-hf")}
    assert len(ports) >= 5 and all(name.endswith("-HF") for name in ports.values())
    papers = set(paper.TABLE2) | set(paper.TABLE3) | set(paper.TABLE4)
    assert not {n for n in ports.values()} & papers
    assert not {f"{n}_mPLUG-Owl3-7B-240728" for n in PAPER_VQA_FOLDERS.values()} & papers


def reference_parse(answer: str) -> float:
    """The reference's reading of an answer: its model files' generate() returns the decoded text stripped
    (models/qwen2_vl_model.py, llavaov_model.py, mplugowl3_model.py: text.strip()), then parse_answer_to_score
    (baselines/compute_conditioned_similarities.py) as written there."""
    answer = answer.strip()  # generate()
    answer = answer.split("\n")[0]  # parse_answer_to_score
    try:
        score = float(answer)
    except ValueError:
        score = 0.0
    return score


@pytest.mark.parametrize("answer", ["7", "6", "9", "4", " 3 ", "5\n", "2\nbecause", "4.5", "10", "0", "-1", "",
                                    "Score: 4", "four", "\n4", "1e1"])
def test_reference_score_reads_an_answer_as_the_reference_does(answer):
    assert reference_score(answer) == reference_parse(answer)


def test_reference_score_keeps_json_valid_where_python_reads_a_word_as_a_number():
    assert math.isnan(reference_parse("nan")) and reference_score("nan") == 0.0
    assert reference_score("inf") == 0.0 and reference_score(None) == 0.0


def test_only_the_paper_protocol_writes_an_answer_over_five(dataset, tmp_path):
    data = load_dataset(dataset)
    seven = PairScore(None, "greedy", "7")  # what greedy scoring makes of "7": unreadable on the 1-5 scale
    assert parse_score("7") is None
    assert BenchRun(data, tmp_path, [], None, None, protocol="paper")._released(seven) == 7.0
    assert BenchRun(data, tmp_path, [], None, None, protocol="fast")._released(seven) == 0.0
    # averaged orders are convis's, read 1-5 as everywhere else
    assert BenchRun(data, tmp_path, [], None, None, symmetric=True, protocol="paper")._released(seven) == 0.0
    assert BenchRun(data, tmp_path, [], None, None, protocol="paper")._released(
        PairScore(3.25, "expected", "3", tuple(np.full(5, 0.2)))) == 3.25


def test_the_default_mode_is_the_papers_under_its_protocol(dataset, tmp_path):
    data = load_dataset(dataset)
    assert BenchRun(data, tmp_path, [], None, None, protocol="paper").scoring == "greedy"
    assert BenchRun(data, tmp_path, [], None, None, protocol="fast").scoring == "expected"
    assert BenchRun(data, tmp_path, [], None, None, mode="expected", protocol="paper").scoring == "expected"


def test_help_says_the_references_internvl_sampled_rather_than_calling_greedy_the_papers_for_all():
    from retrieval.cli.options import ModeOpt

    query_mode = " ".join(ModeOpt.__metadata__[0].help.split())
    assert "the paper's parsed" not in query_mode and "InternVL sampled" in query_mode
    result = CliRunner().invoke(app, ["bench", "run", "--help"], terminal_width=400)
    text = " ".join(result.output.split())
    assert "Default: greedy under --protocol paper" in text and "InternVL sampled instead" in text
    assert "(default 1 under --protocol paper" in text


def test_paper_vqascore_model_runs_in_its_familys_paper_precision_one_question_a_pass(dataset, tmp_path,
                                                                                     monkeypatch):
    from bench.tiny.vlm import build_llava_onevision

    llava = build_llava_onevision(tmp_path / "llava")
    asked = []

    def recording(spec, **kwargs):
        asked.append(kwargs)
        return create_reranker(spec, **kwargs)

    monkeypatch.setattr(rerankers.factory, "create_reranker", recording)
    paper_run = BenchRun(load_dataset(dataset), tmp_path / "paper", [], None, None, protocol="paper",
                         vqascore=str(llava))
    model = paper_run._lmm(paper_run.vqascore)
    assert asked == [{"device": paper_run.engine.models.device, "dtype": "fp16", "batch_size": 1, "share": False}]
    assert model.batch_size == 1
    fast_run = BenchRun(load_dataset(dataset), tmp_path / "fast", [], None, None, vqascore=str(llava))
    fast_run._lmm(fast_run.vqascore)
    # the family's defaults, its pairs sharing an anchor's work
    assert asked[1] == {"device": fast_run.engine.models.device, "batch_size": None, "share": True}
