import os
import shutil
from pathlib import Path

import pytest

from bench.tiny import vision as tm
from bench.tiny import vlm as tiny_vlm
from retrieval.api import Engine
from retrieval.pipeline.settings import IndexSettings
from tests.indexes import indexed_copies
from tests.paths import EXAMPLES


@pytest.fixture(scope="session", autouse=True)
def user_cache(tmp_path_factory) -> Path:
    """The session's own user cache (exported text towers): shared by its tests, so a model exports once."""
    folder = tmp_path_factory.mktemp("user-cache")
    before = os.environ.get("CONVIS_CACHE_DIR")
    os.environ["CONVIS_CACHE_DIR"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("CONVIS_CACHE_DIR", None)
    else:
        os.environ["CONVIS_CACHE_DIR"] = before


@pytest.fixture
def empty_cache(tmp_path, monkeypatch) -> Path:
    """An empty Hugging Face hub cache: no model's weights are cached."""
    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(cache))
    return cache


@pytest.fixture(scope="session")
def example_videos(tmp_path_factory) -> Path:
    """A session copy of examples/ (videos and captions; the videos folder returned): indexing a folder writes
    into it (its .convis-index pointer), and tests never write into the repository."""
    examples = tmp_path_factory.mktemp("examples")
    shutil.copytree(EXAMPLES.parent, examples, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".convis", ".convis-index"))
    return examples / EXAMPLES.name


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("tiny-models")
    return {
        "dinov2": tm.tiny_dinov2(base / "dinov2-tiny"),
        "videomae": tm.tiny_videomae(base / "videomae-tiny"),
        "hf_clip": tm.tiny_hf_clip(base / "clip-tiny"),
        "open_clip": tm.tiny_open_clip(base / "open-clip-tiny"),
    }


@pytest.fixture(scope="session")
def tiny_folders(tmp_path_factory) -> dict[str, Path]:
    """Tiny random VLM checkpoints the reranker and LMM tests load, built once a session (about a second each)."""
    root = tmp_path_factory.mktemp("tiny-vlms")
    return {
        "qwen2_vl": tiny_vlm.build_qwen_vl(root / "tiny-qwen2", model_type="qwen2_vl"),
        "qwen2_5_vl": tiny_vlm.build_qwen_vl(root / "tiny-qwen25", model_type="qwen2_5_vl"),
        "llava": tiny_vlm.build_llava_onevision(root / "tiny-llava"),
        "internvl": tiny_vlm.build_internvl(root / "tiny-internvl"),
        "qwen3_vl": tiny_vlm.build_qwen3_vl(root / "tiny-qwen3"),
        "qwen3_vl_reranker": tiny_vlm.build_qwen3_vl_reranker(root / "tiny-qwen3-reranker"),
    }


@pytest.fixture
def video_folder(tmp_path, example_videos) -> Path:
    """A private copy of a few example clips (tests may modify it)."""
    folder = tmp_path / "videos"
    folder.mkdir()
    for name in ("campus_01.mp4", "campus_02.mp4", "cup.mp4", "carphone_pristine.mp4"):
        shutil.copy(example_videos / name, folder / name)
    return folder


@pytest.fixture(scope="session")
def demo_index(tmp_path_factory, example_videos) -> Path:
    """The example clips indexed as `make demo` indexes them: EfficientNet-Lite0, and the captions folder's
    captions and per-concept descriptions embedded by the text indexer (index dir returned)."""
    index_dir = tmp_path_factory.mktemp("demo") / ".convis"
    Engine(index_dir).index(example_videos, ["efficientnet-lite0"],
                            IndexSettings(captions=example_videos.parent / "captions", workers=1))
    return index_dir


@pytest.fixture(scope="session")
def example_index(tmp_path_factory, example_videos) -> Path:
    """The example clips indexed once with the real EfficientNet-Lite0 weights (index dir returned)."""
    index_dir = tmp_path_factory.mktemp("example-index") / ".convis"
    Engine(index_dir).index(example_videos, ["efficientnet-lite0"], IndexSettings(workers=1))
    return index_dir


@pytest.fixture(scope="session")
def three_clips_indexed(tmp_path_factory, example_videos) -> Path:
    """A folder of three example clips indexed once into its .convis (EfficientNet-Lite0); tests work on copies."""
    return indexed_copies(tmp_path_factory.mktemp("three-clips"), ("cup.mp4", "campus_01.mp4", "campus_02.mp4"),
                          ["efficientnet-lite0"])


@pytest.fixture(scope="module")
def captions_embedded_once():
    """For a module of caption tests: MiniLM loaded and each distinct caption embedded once a test run."""
    from tests.captions_once import each_caption_embedded_once  # sentence-transformers: these tests alone

    with each_caption_embedded_once():
        yield


@pytest.fixture(scope="session")
def near_copies(tmp_path_factory) -> tuple[Path, set]:
    """Example clips and copies of them made by ffmpeg (tests/near_copies.py), indexed once with the fingerprint
    indexer: the folder, and the file pairs that are copies."""
    from tests.near_copies import make_set

    folder = tmp_path_factory.mktemp("near-copies") / "videos"
    truth = make_set(folder)
    Engine(folder / ".convis").index(folder, ["fingerprint"], IndexSettings(workers=1))
    return folder, truth
