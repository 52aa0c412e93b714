"""`convis bench run` on an index with a concept-conditioned indexer: its per-concept vectors are a Table 3 row of
their own (one conditioned file a concept, and rankings), beside the generic vectors of the same model, and
`bench fusion` learns from them as a concept's own cosine."""

import json

import numpy as np
import pytest
from rich.console import Console
from typer.testing import CliRunner

from bench import per_concept
from bench.evaluate import correlation_rows
from bench.fusion import build_table, is_reranker, signal_name
from bench.fusion_train import fit_fusion
from bench.indexed_videos import IndexedVideos
from bench.loaders import ScoreFile, discover, load_gt_pairs, load_pair_scores, load_retrieval_scores
from bench.report import correlation_tables, retrieval_tables
from bench.tiny.dataset import build_dataset
from retrieval.cli.app import app
from retrieval.core.concepts import CONVIS_CONCEPTS
from retrieval.core.scores import unit_similarity
from retrieval.store.catalog import Catalog
from tests.conditioned import NAME, toy_registered

GENERIC = NAME  # the toy's generic vectors' folder: its registry name (default weights, no paper name)
CONCEPTS = per_concept.folder(GENERIC)


def bench_run(*args):
    result = CliRunner().invoke(app, ["bench", "run", *map(str, args), "--json", "--workers", "1"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory, example_videos):
    """The tiny ConViS-shaped folder indexed by the toy concept-conditioned indexer alone."""
    root = tmp_path_factory.mktemp("convis-bench-concepts")
    build_dataset(root, example_videos)
    out = tmp_path_factory.mktemp("concepts-run")
    with toy_registered():
        data = bench_run("--dataset", root, "--out", out, "-i", NAME)
    return root, out, data


def indexed(out) -> IndexedVideos:
    (path,) = out.glob("index-*/catalog.duckdb")
    with Catalog(path, read_only=True) as catalog:
        return IndexedVideos.read(catalog)


def test_per_concept_vectors_are_a_conditioned_row_beside_the_generic_one(toy_run):
    root, out, data = toy_run
    rows = {(r["kind"], r["model"], r["concept"]): r for r in data["results"] if "rho" in r}
    assert {c for k, m, c in rows if m == CONCEPTS and k == "conditioned"} == set(CONVIS_CONCEPTS)
    assert {c for k, m, c in rows if m == GENERIC and k == "global"} == set(CONVIS_CONCEPTS)
    n_pairs = len(json.loads((root / "gt_conditioned_similarities.json").read_text()))
    assert all(rows[("conditioned", CONCEPTS, c)]["n"] == n_pairs for c in CONVIS_CONCEPTS)
    for folder in ("Location", "Main_Action"):
        assert (out / "computed_conditioned_similarities" / folder / CONCEPTS
                / f"{CONCEPTS}_{folder}_similarities.json").is_file()
        assert load_retrieval_scores(out / "computed_retrieval_scores" / folder / CONCEPTS
                                     / f"{CONCEPTS}_{folder}_ranking.json")
    # the instruction changes the vectors, so the concepts' rows differ from each other and from the generic row
    location, action = (rows[("conditioned", CONCEPTS, c)]["rho"] for c in ("location", "main-action"))
    assert location != rows[("global", GENERIC, "location")]["rho"]
    assert action != rows[("global", GENERIC, "main-action")]["rho"]


def test_each_concepts_file_holds_the_cosine_of_the_vectors_made_under_its_instruction(toy_run):
    _, out, _ = toy_run
    videos = indexed(out)
    generic = videos.vectors[f"{NAME}:toy"]
    assert set(videos.concepts[f"{NAME}:toy"]) == set(CONVIS_CONCEPTS)
    for concept, folder in (("location", "Location"), ("main-action", "Main_Action")):
        vectors = videos.vectors[videos.concepts[f"{NAME}:toy"][concept]]
        path = out / "computed_conditioned_similarities" / folder / CONCEPTS / f"{CONCEPTS}_{folder}_similarities.json"
        scores = load_pair_scores(path)
        for (a, b), score in scores.items():
            assert score == pytest.approx(float(unit_similarity(vectors[a] @ vectors[b])), abs=1e-6)
        differ = [k for k in scores if abs(unit_similarity(generic[k[0]] @ generic[k[1]]) - scores[k]) > 1e-4]
        assert differ  # not the generic vectors' cosine under another name


def test_the_report_names_the_per_concept_row_after_its_model(toy_run):
    root, out, _ = toy_run
    files = discover([out / "computed_similarities", out / "computed_conditioned_similarities"],
                     "_similarities.json")
    rows = correlation_rows(files, load_gt_pairs(root / "gt_conditioned_similarities.json"))
    console = Console(width=200, record=True)
    for table in correlation_tables(rows):
        console.print(table)
    text = console.export_text()
    assert f"{GENERIC} (per concept)" in text and CONCEPTS not in text
    assert "generic vectors" in text  # the footer says what each of the two rows is
    assert per_concept.shown_names([CONCEPTS]) == {CONCEPTS: CONCEPTS}  # alone, a folder keeps its name


def test_the_retrieval_tables_name_it_alike(toy_run):
    from bench.evaluate import retrieval_rows
    from bench.run import load_dataset

    root, out, _ = toy_run
    human = load_dataset(root).human
    rows = retrieval_rows(discover([out / "computed_retrieval_scores"], "_ranking.json"), human)
    console = Console(width=200, record=True)
    for table in retrieval_tables(rows):
        console.print(table)
    assert f"{GENERIC} (per concept)" in console.export_text()


def test_fusion_learns_from_the_per_concept_vectors_as_a_cosine(toy_run):
    root, out, _ = toy_run
    gt = load_gt_pairs(root / "gt_conditioned_similarities.json")
    table = build_table(discover([out / "computed_similarities", out / "computed_conditioned_similarities"],
                                 "_similarities.json"), gt)
    own = f"{GENERIC}#location"
    assert set(table.signals("location")) == {GENERIC, own}
    assert f"{GENERIC}#main-action" in table.signals("main-action") and own not in table.signals("main-action")
    assert not is_reranker(own)
    model = fit_fusion(table, ["location"], kinds=("ecdf",), alphas=(0.01,))
    assert own in model.signals("location")
    assert model.weights("location")[own] > 0  # the location vectors follow the location ratings here


def test_a_cosine_of_zero_is_a_value_and_an_lmms_zero_is_missing(tmp_path):
    gt_path = tmp_path / "gt_conditioned_similarities.json"
    gt_path.write_text(json.dumps([{"video1": f"v{i}.mp4", "video2": f"w{i}.mp4",
                                    "conditioned_similarity": {"Location": i + 1.0}} for i in range(4)]))
    gt = load_gt_pairs(gt_path)
    files = []
    for model in (per_concept.folder("m"), "some-lmm"):
        path = tmp_path / model / f"{model}_Location_similarities.json"
        path.parent.mkdir()
        path.write_text(json.dumps([{"video1": f"v{i}.mp4", "video2": f"w{i}.mp4", "similarity": float(i)}
                                    for i in range(4)]))
        files.append(ScoreFile(path, model, "location"))
    assert [signal_name(f) for f in files] == ["m#location", "reranker:some-lmm"]
    columns = build_table(files, gt).columns["location"]
    assert columns["m#location"][0] == 0.0 and np.isnan(columns["reranker:some-lmm"][0])


@pytest.mark.slow
def test_a_tiny_qwen3_vl_embedding_gets_its_per_concept_row(few_clips, tmp_path):
    from bench.tiny.embedding import build_qwen3_vl_embedding

    checkpoint = build_qwen3_vl_embedding(tmp_path / "models" / "qwen3-vl-embedding" / "tiny")
    data = bench_run("--dataset", few_clips, "--out", tmp_path / "out", "-i", f"qwen3-vl-embedding:{checkpoint}")
    models = {(r["kind"], r["model"]) for r in data["results"] if "rho" in r}
    (generic,) = [m for k, m in models if k == "global"]
    assert ("conditioned", per_concept.folder(generic)) in models
    assert len(list((tmp_path / "out" / "computed_conditioned_similarities").rglob("*_similarities.json"))) == 5
