"""Text towers exported to ONNX answer as their torch models do, keyed by the weights they came from, and are
read with ONNX Runtime and tokenizers only."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from indexers import create_indexer, text_towers
from indexers.text_export import PROBES, export
from retrieval.model_cache import ModelCache
from tests.indexers.test_clip import _hf_clip_with_tokenizer, _open_clip_with_vocabulary

# none of these is a probe of the export's check: parity is shown on sentences it never saw
SENTENCES = ["a person opens a box on a table", "Two bikes lean on a wall, in the rain.", "cup",
             "the same words again and again " * 30, "ÉTÉ à la plage -- 21 °C"]


@pytest.fixture(scope="module")
def minilm():
    return create_indexer("text", device="cpu")


@pytest.fixture(scope="module")
def minilm_tower(minilm, tmp_path_factory):
    return export(minilm, tmp_path_factory.mktemp("towers"))


def _parity(tower, indexer) -> float:
    ours, theirs = tower.embed_texts(SENTENCES), indexer.embed_texts(SENTENCES)
    assert ours.shape == theirs.shape == (len(SENTENCES), indexer.dim)
    return float(np.abs(ours - theirs).max())


def test_minilm_tower_embeds_as_sentence_transformers_does(minilm, minilm_tower):
    tower, manifest = minilm_tower
    assert manifest.cosine >= text_towers.MIN_COSINE and tower.model_id == minilm.model_id
    assert (tower.kind, tower.dim, manifest.inputs) == ("text", 384, ("input_ids", "attention_mask"))
    assert _parity(tower, minilm) < 1e-5
    assert np.allclose(tower.embed_texts(SENTENCES[:1]), minilm.embed_texts(SENTENCES[:1]), atol=1e-5)  # no padding


def test_the_export_is_found_by_the_indexed_id_and_read_without_torch(minilm, minilm_tower):
    tower, _ = minilm_tower
    root = tower.folder.parent.parent
    assert text_towers.locate(minilm.model_id, root=root) == tower.folder
    assert text_towers.locate("text", root=root) == tower.folder  # the spec as written, keyed as built
    probe = (f"import sys, json; from pathlib import Path; from indexers import text_towers as t; "
             f"tower = t.load(t.locate({minilm.model_id!r}, root=Path({str(root)!r}))); "
             f"v = tower.embed_texts({SENTENCES[:2]!r}); "
             f"print(json.dumps([v.tolist(), sorted(m for m in ('torch', 'transformers') if m in sys.modules)]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    vectors, heavy = json.loads(out)
    assert heavy == [] and np.allclose(vectors, minilm.embed_texts(SENTENCES[:2]), atol=1e-5)


def test_hf_clip_tower_truncates_and_pools_as_get_text_features(tiny_models, tmp_path):
    clip = create_indexer(str(_hf_clip_with_tokenizer(tiny_models["hf_clip"], tmp_path / "clip")), device="cpu")
    tower, manifest = export(clip, tmp_path / "towers")
    assert manifest.usable and tower.kind == "image" and _parity(tower, clip) < 1e-5


def test_open_clip_tower_tokenizes_as_open_clip_does(tmp_path):
    clip = create_indexer(str(_open_clip_with_vocabulary(tmp_path / "open-clip", 49408)), device="cpu")
    tower, manifest = export(clip, tmp_path / "towers")
    assert manifest.usable and manifest.inputs == ("input_ids",) and _parity(tower, clip) < 1e-5


def test_open_clip_tokenizer_gives_open_clips_ids_at_its_full_context():
    import open_clip

    from indexers.clip import open_clip_tokenizer

    simple = open_clip.get_tokenizer("ViT-L-14")
    texts = [*SENTENCES, *PROBES, "it's!! a café... 🙂 x"]
    ids = [e.ids for e in open_clip_tokenizer(simple).encode_batch(texts)]
    assert np.array_equal(np.array(ids), simple(texts).numpy())


def test_new_weights_under_the_same_name_are_exported_again(tmp_path):
    folder = _open_clip_with_vocabulary(tmp_path / "open-clip", 49408)
    spec = f"clip:{folder}"
    before = text_towers.locate(spec, root=tmp_path)
    weights = folder / "open_clip_model.safetensors"
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 10**9))
    assert before is not None and text_towers.locate(spec, root=tmp_path) not in (None, before)


def test_an_export_that_differs_is_refused_and_torch_answers(minilm, tmp_path, monkeypatch):
    off = minilm.embed_texts(list(PROBES)) + 0.05  # what a wrong pooling or tokenizer would look like

    class Drifting:
        """MiniLM whose torch vectors the export cannot match."""

        def __getattr__(self, name):
            return getattr(minilm, name)

        def embed_texts(self, texts):
            return off / np.linalg.norm(off, axis=1, keepdims=True)

    tower, manifest = export(Drifting(), tmp_path)
    assert tower is None and not manifest.usable
    folder = text_towers.locate(minilm.model_id, root=tmp_path)
    assert not (folder / text_towers.GRAPH).exists() and text_towers.load(folder) is None
    assert text_towers.refused(folder).cosine == manifest.cosine

    monkeypatch.setenv("CONVIS_CACHE_DIR", str(tmp_path))
    notices = []
    answered_by = ModelCache(device="cpu").text_tower(minilm.model_id, notices=notices)
    assert answered_by.model_id == minilm.model_id and not isinstance(answered_by, text_towers.OnnxTextTower)
    assert len(notices) == 1 and "embedded with torch" in notices[0] and "cosine" in notices[0]


def test_the_model_cache_exports_on_first_use_and_reads_the_export_after(minilm, tmp_path, monkeypatch):
    monkeypatch.setenv("CONVIS_CACHE_DIR", str(tmp_path))
    first = ModelCache(device="cpu")
    notices = []
    assert isinstance(first.text_tower("text", notices=notices), text_towers.OnnxTextTower) and notices == []
    assert [spec for spec, _ in first.indexers()] == ["text"]  # torch built it once, to export it
    later = ModelCache(device="cpu")
    assert isinstance(later.text_tower("text"), text_towers.OnnxTextTower) and later.indexers() == []
    assert Path(tmp_path, "text-towers").is_dir()
