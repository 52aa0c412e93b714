"""`convis models --full` names where each captioner generates, with the vLLM releases it supports."""

import json

from typer.testing import CliRunner

from rerankers.generation import VLLM_REQUIREMENT
from retrieval.cli.app import app

runner = CliRunner()


def test_models_full_names_the_supported_vllm_releases():
    full = runner.invoke(app, ["models", "--full"], env={"COLUMNS": "400", "HF_HUB_OFFLINE": "1"})
    assert full.exit_code == 0, full.output
    assert VLLM_REQUIREMENT in full.stdout
    short = runner.invoke(app, ["models"], env={"COLUMNS": "400", "HF_HUB_OFFLINE": "1"})
    assert VLLM_REQUIREMENT not in short.stdout
    rows = {r["name"]: r for r in json.loads(runner.invoke(app, ["models", "--json"]).stdout)}
    assert VLLM_REQUIREMENT in rows["qwen2.5-vl"]["backends"]
    assert "backends" not in rows["qwen3-vl-reranker"]  # a pair scorer never captions
