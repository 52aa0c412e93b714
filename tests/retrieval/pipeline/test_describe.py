"""Index-time descriptions: a captioner describes each unit once, stored in the catalog, cached by
bytes + span + model + prompt version, resumed after a crash, bad answers kept as unreadable.

A tiny random InternVL (bench/tiny/vlm.py) is the captioner, through the real factory; every answer
is counted by wrapping the generation that asks every question of a batch of units (rerankers.bulk).
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from bench.tiny import vlm as tiny_vlm
from rerankers import bulk
from rerankers.prompts import describe as describe_prompt
from rerankers.prompts.describe import DESCRIBE_KEYS
from retrieval.api import Engine
from retrieval.lmm.captioning import MAX_CHARS
from retrieval.pipeline.describe import MODEL_CALLS_PER_UNIT
from retrieval.pipeline.distribute import SerialDistributor
from retrieval.pipeline.settings import IndexSettings
from retrieval.store.catalog import Catalog
from retrieval.store.snapshots import SNAPSHOT_NAME
from tests import media
from tests.rerankers.spies import GenerationConfigSpy, ProcessorSpy
from tests.rerankers.test_describe import qwen_file_indices, qwen_file_size

UNITS = 4  # the video_folder fixture: four clips, one unit each


@pytest.fixture(scope="module")
def captioner_folder(tmp_path_factory):
    return tiny_vlm.build_internvl(tmp_path_factory.mktemp("captioner") / "internvl")


@pytest.fixture(autouse=True)
def short_answers(monkeypatch):
    # a few tokens an answer keep a tiny model's run short; the requests themselves are unchanged
    monkeypatch.setattr(describe_prompt, "CAPTION_TOKENS", 6)
    monkeypatch.setattr(describe_prompt, "CONCEPT_TOKENS", 3)


class Calls:
    """Counts the answers the model generates (a generation counts one a unit and question: its rows); ``answer``
    replaces the n-th answer's text, ``stop_after`` simulates a crash in the generation that would pass that
    count, ``fail_on`` an error in the one holding that answer; ``batches`` are the generations' rows."""

    def __init__(self, monkeypatch):
        self.count, self.answer, self.stop_after, self.fail_on, self.prompts = 0, None, None, set(), []
        self.batches = []
        real = bulk.generate_rows

        def counted(model, rows):
            if self.stop_after is not None and self.count + len(rows) > self.stop_after:
                raise KeyboardInterrupt  # the run dies here, mid-generation
            first = self.count + 1
            self.count += len(rows)
            self.prompts += [request for _, request, _ in rows]
            self.batches.append(len(rows))
            if set(range(first, self.count + 1)) & self.fail_on:
                raise RuntimeError("CUDA out of memory")
            texts = real(model, rows)
            return [self.answer(first + k, t) if self.answer else t for k, t in enumerate(texts)]

        monkeypatch.setattr(bulk, "generate_rows", counted)


@pytest.fixture
def calls(monkeypatch):
    return Calls(monkeypatch)


@pytest.fixture
def index(tmp_path, tiny_models, captioner_folder, video_folder):
    # one unit a generation unless asked: each unit's answers are then committed before the next is asked
    def run(*extra, folder=video_folder, batch=1):
        engine = Engine(tmp_path / "index", rerank_batch=batch)
        specs = [f"dinov2:{tiny_models['dinov2']}", *extra]
        report = engine.index(folder, specs, IndexSettings(captioner=f"internvl:{captioner_folder}"),
                              distributor=SerialDistributor())
        return engine, report
    return run


def rows(engine, path=None):
    catalog = path or engine.catalog_path
    with Catalog(catalog, read_only=True) as cat:
        return cat.db.execute("SELECT content_hash, start_s, end_s, concept, model, revision, prompt_version, "
                              "text, status, error FROM descriptions ORDER BY ALL").fetchall()


def test_every_unit_gets_a_caption_and_one_description_per_concept(index, calls):
    engine, report = index()
    assert (report.described, report.describe_calls) == (UNITS, UNITS * MODEL_CALLS_PER_UNIT)
    assert calls.count == UNITS * 6
    stored = rows(engine)
    assert len(stored) == UNITS * len(DESCRIBE_KEYS)
    with Catalog(engine.catalog_path, read_only=True) as cat:
        units = cat.db.execute("SELECT u.unit_id, f.content_hash FROM units u JOIN files f USING (file_id)").fetchall()
        (model,) = engine.models.rerankers()
        for unit_id, digest in units:
            described = cat.unit_descriptions(unit_id)
            assert sorted(d.concept for d in described) == sorted(DESCRIBE_KEYS)
            assert {(d.content_hash, d.key.model, d.key.revision, d.key.prompt_version) for d in described} == \
                {(digest, model.model_id, model.revision, model.describe_version)}
        by_concept = cat.concept_descriptions("location")
        assert set(by_concept) == {u for u, _ in units}
        assert all(d.concept == "location" for d in by_concept.values())
    assert report.as_dict()["described"] == UNITS
    # readers read snapshots: the published one holds the descriptions too
    assert rows(engine, engine.index_dir / SNAPSHOT_NAME) == stored


def test_a_second_run_and_the_same_bytes_under_another_name_ask_nothing(index, calls, video_folder):
    engine, _ = index()
    first = rows(engine)
    calls.count = 0
    _, again = index()
    assert (calls.count, again.described) == (0, 0)
    shutil.copy(video_folder / "cup.mp4", video_folder / "cup_copy.mp4")
    _, copied = index()
    assert (copied.indexed, calls.count, copied.described) == (1, 0, 0)
    assert rows(engine) == first


def test_a_run_killed_mid_way_keeps_the_units_it_described_and_the_next_asks_only_for_the_rest(index, calls,
                                                                                                tmp_path):
    index_dir = tmp_path / "index"
    calls.stop_after = 2 * MODEL_CALLS_PER_UNIT + 3  # two units described, the third dies in its generation
    with pytest.raises(KeyboardInterrupt):
        index()
    assert calls.count == 2 * MODEL_CALLS_PER_UNIT
    engine = Engine(index_dir)
    assert len(rows(engine)) == 2 * len(DESCRIBE_KEYS)  # the two units described, nothing of the third
    calls.stop_after, calls.count = None, 0
    engine, report = index()
    assert calls.count == (UNITS - 2) * 6  # the killed unit's answers were never stored: asked again
    assert report.described == UNITS - 2
    assert len(rows(engine)) == UNITS * len(DESCRIBE_KEYS)


def test_bad_answers_are_stored_unreadable_with_the_reason_and_the_run_completes(index, calls):
    bad = {1: "", 2: "x" * 100_000, 3: b"\x00\xff bytes", 4: "\x00\x07\x1b"}
    calls.answer = lambda n, text: bad.get(n, text)
    engine, report = index()
    assert report.indexed == UNITS and report.described == UNITS
    assert report.describe_unreadable == 4
    stored = rows(engine)
    unreadable = [(r[3], r[7], r[9]) for r in stored if r[8] == "unreadable"]
    errors = sorted(e for _, _, e in unreadable)
    assert errors == sorted(["empty answer", "empty answer", f"100000 characters, more than {MAX_CHARS}",
                             "not text: bytes"])
    assert all(text is None for _, text, _ in unreadable)
    assert len(stored) == UNITS * len(DESCRIBE_KEYS)
    calls.answer, calls.count = None, 0
    index()
    assert calls.count == 0  # an unreadable answer is an answer: never asked again


def test_a_model_error_costs_its_unit_only_and_a_later_run_asks_again(index, calls):
    calls.fail_on = {8}  # the second unit's second request
    engine, report = index()
    assert report.described == UNITS - 1
    assert any("not described" in n and "CUDA out of memory" in n for n in report.notes)
    assert len(rows(engine)) == (UNITS - 1) * len(DESCRIBE_KEYS)
    calls.fail_on, calls.count = set(), 0
    _, again = index()
    assert (again.described, calls.count) == (1, 6)


def test_the_text_indexer_embeds_each_generated_caption(index, calls):
    engine, report = index("text")
    with Catalog(engine.catalog_path, read_only=True) as cat:
        (text_id,) = [r.indexer for r in cat.indexers() if r.kind == "text"]
        captions = cat.concept_descriptions("caption")
        readable = {u: d.text for u, d in captions.items() if d.status == "ok"}
        stored = cat.vectors_of(text_id, list(captions))
    assert readable and set(stored) == set(readable)
    assert report.captioned == len(readable)
    model = engine.indexer("text")
    for unit_id, text in readable.items():
        np.testing.assert_allclose(stored[unit_id], model.embed_texts([text])[0], atol=1e-5)


def test_the_cli_reports_descriptions_as_json(tmp_path, tiny_models, captioner_folder, video_folder, calls):
    from retrieval.cli.app import app

    result = CliRunner().invoke(app, ["index", str(video_folder), "--index-dir", str(tmp_path / "ix"), "-i",
                                      f"dinov2:{tiny_models['dinov2']}", "--captioner",
                                      f"internvl:{captioner_folder}", "--workers", "1", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["described"], report["describe_calls"]) == (UNITS, UNITS * 6)
    bad = CliRunner().invoke(app, ["index", str(video_folder), "--index-dir", str(tmp_path / "ix"),
                                   "--captioner", "no-such-model"])
    assert bad.exit_code != 0 and "no-such-model" in bad.output


def test_per_concept_caption_files_are_stored_as_that_concepts_description(tmp_path, tiny_models, video_folder):
    captions = tmp_path / "captions"
    captions.mkdir()
    (captions / "cup.location.txt").write_text("A kitchen table.\n")
    (captions / "cup.main-action.txt").write_text("   ")
    (captions / "cup.camera.txt").write_text("not a ConViS concept")
    engine = Engine(tmp_path / "index")

    def run():
        return engine.index(video_folder, [f"dinov2:{tiny_models['dinov2']}"], IndexSettings(captions=captions),
                            distributor=SerialDistributor())

    assert run().concept_files == 1
    stored = [(r[3], r[4], r[7], r[8], r[9]) for r in rows(engine)]
    assert sorted(stored) == [("location", "file", "A kitchen table.", "ok", None),
                              ("main-action", "file", None, "unreadable", "empty answer")]
    with Catalog(engine.catalog_path, read_only=True) as cat:
        (cup_hash,) = cat.db.execute("SELECT content_hash FROM files WHERE path = 'cup.mp4'").fetchone()
    assert {r[0] for r in rows(engine)} == {cup_hash}
    assert run().concept_files == 0  # unchanged files are not written again
    (captions / "cup.location.txt").write_text("A lab bench.")
    assert run().concept_files == 1
    assert ("location", "A lab bench.") in [(r[3], r[7]) for r in rows(engine)]
    assert len(rows(engine)) == 2


def test_the_pass_reports_its_progress_as_events_a_bar_shows_without_keeping_them_in_the_report(
        tmp_path, tiny_models, captioner_folder, video_folder, calls):
    shown = []
    settings = IndexSettings(captioner=f"internvl:{captioner_folder}")
    report = Engine(tmp_path / "index").index(video_folder, [f"dinov2:{tiny_models['dinov2']}"], settings,
                                              progress=lambda event, data: shown.append((event, data)),
                                              distributor=SerialDistributor())
    events = [(e, d) for e, d in shown if e in ("describe", "described")]
    assert events[0] == ("describe", {"total": UNITS})
    assert [d["calls"] for _, d in events[1:]] == [MODEL_CALLS_PER_UNIT] * UNITS
    assert all(d["seconds"] > 0 for _, d in events[1:])
    assert report.as_dict()["captions_per_second"] == pytest.approx(
        UNITS * MODEL_CALLS_PER_UNIT / report.describe_seconds, rel=1e-2)
    assert any(n.startswith(f"described {UNITS} unit(s): {UNITS * 6} model calls") for n in report.notes)


def test_a_catalog_from_before_descriptions_opens_reads_nothing_and_gains_the_table(tmp_path):
    path = tmp_path / "catalog.duckdb"
    with Catalog(path) as cat:
        cat.db.execute("DROP TABLE descriptions")
        cat.db.execute("UPDATE settings SET value = '1' WHERE key = 'schema_version'")
    with Catalog(path, read_only=True) as old:
        assert (old.description_count(), old.unit_descriptions(1), old.concept_descriptions("location")) == \
            (0, [], {})
    with Catalog(path) as cat:  # a writer adds the table
        assert cat.description_count() == 0
        assert cat.db.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'descriptions'"
                              ).fetchone() == (1,)


def describe_cli(index_dir, *args):
    from retrieval.cli.app import app

    return CliRunner().invoke(app, ["describe", "--index-dir", str(index_dir), *map(str, args)])


@pytest.mark.slow
def test_describe_asks_a_users_concept_once_a_unit_and_gives_it_a_searchable_signal(index, calls, video_folder):
    engine, _ = index()
    calls.count, calls.prompts = 0, []
    calls.answer = lambda n, text: f"seen from angle {n}"
    done = describe_cli(engine.index_dir, "--concept", "camera angle", "--json")
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert (report["concepts"], report["described"], report["calls"]) == (["camera-angle"], UNITS, UNITS)
    assert calls.prompts == [describe_prompt.FREE_REQUEST.format(words="camera angle")] * UNITS
    assert calls.prompts[0] == "Describe only the camera angle in this video. Answer in one short sentence."
    assert report["description_vectors"] == UNITS
    assert sorted(r[7] for r in rows(engine) if r[3] == "camera-angle") == sorted(
        f"seen from angle {n}" for n in range(1, UNITS + 1))
    again = describe_cli(engine.index_dir, "--concept", "camera angle", "--json")
    assert json.loads(again.stdout)["calls"] == 0 and calls.count == UNITS  # never asked twice
    from retrieval.cli.app import app

    queried = CliRunner().invoke(app, ["query", "--anchor", str(video_folder / "cup.mp4"), "-c", "camera angle",
                                       "--index-dir", str(engine.index_dir), "--json"])
    assert queried.exit_code == 0, queried.output
    concept = json.loads(queried.stdout)["concepts"][0]
    assert concept["description_signal"].endswith("#camera-angle")
    found = CliRunner().invoke(app, ["search", "-c", "camera angle", "seen from angle 2", "--index-dir",
                                     str(engine.index_dir), "--json"])
    assert found.exit_code == 0, found.output
    assert len(json.loads(found.stdout)["hits"]) == UNITS


@pytest.mark.slow
def test_a_describe_run_killed_mid_way_resumes_with_the_units_left(index, calls):
    engine, _ = index()
    calls.count, calls.stop_after = 0, 2
    killed = describe_cli(engine.index_dir, "--concept", "camera angle")  # the family's batch: 4 units a call
    assert killed.exit_code == 130 and "interrupted" in killed.stderr
    assert not [r for r in rows(engine) if r[3] == "camera-angle"]  # the batch in flight is all it lost
    calls.count, calls.stop_after = 0, None
    resumed = json.loads(describe_cli(engine.index_dir, "--concept", "camera angle", "--json").stdout)
    assert (resumed["units"], resumed["calls"]) == (UNITS, UNITS) and calls.batches[-1] == UNITS


@pytest.mark.slow
def test_units_are_asked_in_batches_and_answer_as_one_at_a_time(tmp_path, index, calls):
    one, _ = index()
    singles = rows(one)
    assert calls.batches == [MODEL_CALLS_PER_UNIT] * UNITS  # one unit a generation, all its questions
    shutil.rmtree(one.index_dir)
    calls.batches = []
    batched, report = index(batch=4)
    assert calls.batches == [UNITS * MODEL_CALLS_PER_UNIT]  # one generation: every question of all four units
    assert report.describe_calls == UNITS * MODEL_CALLS_PER_UNIT
    assert rows(batched) == singles


def test_describe_without_a_captioner_is_one_line(tmp_path, tiny_models, video_folder):
    Engine(tmp_path / "index").index(video_folder, [f"dinov2:{tiny_models['dinov2']}"], IndexSettings(),
                                     distributor=SerialDistributor())
    result = describe_cli(tmp_path / "index", "--concept", "camera angle")
    assert result.exit_code == 2 and not result.stdout
    assert result.stderr.strip() == ("error: this index has no captioner yet: name one with --captioner (any "
                                     "--reranker spec, e.g. qwen2-vl)")


def test_describe_asks_a_unit_only_for_the_answers_it_lacks(index, calls):
    engine, _ = index()  # the caption and the five ConViS concepts of every unit
    calls.count, calls.prompts = 0, []
    done = describe_cli(engine.index_dir, "-c", "location", "-c", "camera angle", "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["calls"] == UNITS == calls.count
    assert set(calls.prompts) == {describe_prompt.FREE_REQUEST.format(words="camera angle")}


KILLED_RUN = """
import os, signal, sys
from rerankers import bulk
from retrieval.api import Engine
from retrieval.pipeline.distribute import SerialDistributor
from retrieval.pipeline.settings import IndexSettings

index_dir, videos, dinov2, captioner, after = sys.argv[1:]
real, seen = bulk.generate_rows, []

def dies(model, rows):
    if len(seen) + len(rows) > int(after):
        os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no finally: the process is gone
    seen.extend(rows)
    return real(model, [(clip, request, 3) for clip, request, _ in rows])

bulk.generate_rows = dies
Engine(index_dir, rerank_batch=1).index(videos, [dinov2], IndexSettings(captioner=captioner),
                                        distributor=SerialDistributor())
"""


@pytest.mark.slow
def test_a_run_sigkilled_mid_captioning_keeps_the_units_it_committed_and_asks_only_for_the_rest(
        tmp_path, tiny_models, captioner_folder, video_folder, index, calls):
    import subprocess
    import sys

    from tests.paths import ROOT

    after = 2 * MODEL_CALLS_PER_UNIT + 3  # two units answered, the third killed in its generation
    killed = subprocess.run([sys.executable, "-c", KILLED_RUN, str(tmp_path / "index"), str(video_folder),
                             f"dinov2:{tiny_models['dinov2']}", f"internvl:{captioner_folder}", str(after)],
                            cwd=ROOT, capture_output=True, timeout=600)
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    engine, report = index()  # the same index, resumed in this process
    assert report.described == UNITS - 2 and calls.count == (UNITS - 2) * MODEL_CALLS_PER_UNIT
    assert len(rows(engine)) == UNITS * len(DESCRIBE_KEYS)


# --------------------------------------------------------------------------- the paper protocol reaches captioning

@pytest.fixture(scope="module")
def qwen_folder(tmp_path_factory):
    return tiny_vlm.build_qwen_vl(tmp_path_factory.mktemp("captioner") / "qwen", model_type="qwen2_5_vl")


@pytest.fixture
def numbered_folder(tmp_path):
    """Two 640x360 clips whose frames carry their numbers: 61 frames and 45 frames at 10 fps."""
    folder = tmp_path / "numbered"
    folder.mkdir()
    for name, frames in (("a.mp4", 61), ("b.mp4", 45)):
        media.make_clip(folder / name, frames=frames, fps=10, size=(640, 360),
                        pixels=lambda i: media.numbered_frame(i, 0, (640, 360)))
    return folder


def test_describe_on_a_paper_index_captions_as_the_reference(tmp_path, tiny_models, qwen_folder, numbered_folder,
                                                             monkeypatch):
    """`describe` (bench run's route) on a --protocol paper index: Qwen reads each file at 1 fps within 360*420 px a
    frame and decodes with its checkpoint's own config up to 1024 new tokens; the captions are stored apart."""
    engine = Engine(tmp_path / "index")
    spec = f"qwen2.5-vl:{qwen_folder}"
    # the engine's own instance, built once as a paper index's captioner builds it: spied before it runs
    model = engine.models.reranker(spec, "paper")
    processor, generated = ProcessorSpy(model.processor), GenerationConfigSpy(model, monkeypatch)
    monkeypatch.setattr(model, "processor", processor)
    engine.index(numbered_folder, [f"dinov2:{tiny_models['dinov2']}"], IndexSettings(protocol="paper"),
                 distributor=SerialDistributor())
    engine.describe(captioner=spec, caption_only=True)

    seen = sorted(tuple(media.read_numbered_frame(f)[1] for f in kwargs["videos"][0]) for kwargs, _ in processor.calls)
    assert seen == sorted([tuple(qwen_file_indices(45, 10)), tuple(qwen_file_indices(61, 10))])
    assert {kwargs["videos"][0].shape[1:3] for kwargs, _ in processor.calls} == {qwen_file_size(360, 640)}
    assert [config.max_new_tokens for config in generated.configs] == [1024, 1024]
    assert {(row[3], row[6]) for row in rows(engine)} == {("caption", model.captioner("paper").describe_version)}


def test_index_captioner_on_a_paper_index_samples_its_captions_as_the_reference(tmp_path, tiny_models,
                                                                                captioner_folder, numbered_folder,
                                                                                monkeypatch):
    """`index --captioner` under --protocol paper: InternVL's captions sample (its chat()) up to 1024 new tokens,
    one unit a generation, and are stored under the paper rule's version."""
    engine = Engine(tmp_path / "index")
    spec = f"internvl:{captioner_folder}"
    model = engine.models.reranker(spec, "paper")
    generated = GenerationConfigSpy(model, monkeypatch)
    engine.index(numbered_folder, [f"dinov2:{tiny_models['dinov2']}"],
                 IndexSettings(protocol="paper", captioner=spec), distributor=SerialDistributor())
    asked = [(c.max_new_tokens, c.do_sample) for c in generated.configs]
    assert asked.count((1024, True)) == 2  # one caption a clip, sampled
    assert len(asked) == 2 * MODEL_CALLS_PER_UNIT  # each answer its own generation
    paper = model.captioner("paper").describe_version
    assert {row[6] for row in rows(engine)} == {paper} and "|paper|" in paper


def test_a_paper_index_captions_with_the_familys_paper_precision_and_keys_captions_by_it(tmp_path, qwen_folder,
                                                                                       monkeypatch):
    import rerankers.factory

    asked = []
    create = rerankers.factory.create_reranker

    def recording(spec, **kwargs):
        asked.append(kwargs)
        return create(spec, **kwargs)

    monkeypatch.setattr(rerankers.factory, "create_reranker", recording)
    models = Engine(tmp_path / "index", device="cpu").models
    spec = f"qwen2.5-vl:{qwen_folder}"
    captioner = models.captioner(spec, "paper")
    # as the reference loaded Qwen2.5-VL, one pair a pass, nothing shared
    assert asked == [{"device": "cpu", "dtype": "bf16", "batch_size": 1, "share": False}]
    assert captioner.model is models.reranker(spec, "paper") and len(asked) == 1  # built once, shared
    # bf16 runs in fp32 on a CPU: captions are stored under the precision that wrote them
    assert captioner.describe_version.endswith("|dtype=float32")
    assert models.captioner(spec, "fast") is models.reranker(spec) and asked[1] == {"device": "cpu", "batch_size": None,
                                                                                           "share": True}


def test_a_paper_index_refuses_llava_video_as_its_captioner_in_one_line_before_any_work(tmp_path, tiny_models,
                                                                                      video_folder):
    from retrieval.cli.app import app

    llava_video = tiny_vlm.build_llava_onevision(tmp_path / "LLaVA-Video-7B-Qwen2-hf")  # a conversion's folder
    index_dir, dinov2 = tmp_path / "ix", f"dinov2:{tiny_models['dinov2']}"
    refused = CliRunner().invoke(app, ["index", str(video_folder), "--index-dir", str(index_dir), "-i", dinov2,
                                       "--protocol", "paper", "--captioner", str(llava_video), "--workers", "1"])
    assert refused.exit_code == 2 and not refused.stdout, refused.output
    (line,) = refused.stderr.strip().splitlines()
    assert "llava-video: " in line and "mm_newline_position 'grid'" in line and "--protocol fast" in line
    assert not index_dir.exists()  # nothing indexed, no index begun
    built = CliRunner().invoke(app, ["index", str(video_folder), "--index-dir", str(index_dir), "-i", dinov2,
                                     "--protocol", "paper", "--workers", "1"])
    assert built.exit_code == 0, built.output
    for spec in (str(llava_video), f"llava-onevision:{llava_video}"):
        refused = describe_cli(index_dir, "--captioner", spec)
        assert refused.exit_code == 2 and not refused.stdout, refused.output
        (line,) = refused.stderr.strip().splitlines()
        assert "mm_newline_position 'grid'" in line
    with Catalog(index_dir / "catalog.duckdb", read_only=True) as catalog:
        assert catalog.setting("captioner") is None  # the refused captioner is not the index's
