"""Export an indexer's text tower to ONNX (see ``indexers.text_towers``), where torch is already loaded.

The family gives its ``text_graph()``: the torch module from token ids to its sentence features (pooling as the
model defines it), and its tokenizer as a ``tokenizers.Tokenizer`` set to truncate and pad as its own call does.
The export is then checked against the torch model itself on fixed probe sentences: below ``MIN_COSINE`` the
folder records the refusal and the torch model keeps answering.
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import torch

from indexers.base import Indexer
from indexers.text_towers import GRAPH, MANIFEST, TOKENIZER, OnnxTextTower, TowerManifest, folder_of

# short and long (past 77 tokens: truncation), punctuation, accents, digits, an emoji, repeated spaces
PROBES = (
    "a hand holding a cup",
    "The campus square at noon, people walking past the fountain!!",
    "un café déjà vu: 3 dogs & 2 cats -- it's 4:45 p.m.",
    "x",
    "emoji 🙂  and   odd\tspacing",
    " ".join(f"word{i}" for i in range(120)),
)
OPSET = 17


@dataclass
class TextGraph:
    """What an export needs of a family: ``module(*inputs)`` -> (batch, dim) features, and its tokenizer."""

    module: torch.nn.Module
    tokenizer: object  # tokenizers.Tokenizer, truncation and padding set
    inputs: tuple[str, ...] = ("input_ids", "attention_mask")


class Features(torch.nn.Module):
    """``forward(*inputs)`` is ``features(model, *inputs)``; the model is a submodule, so its weights export."""

    def __init__(self, model: torch.nn.Module, features):
        super().__init__()
        self.model, self.features = model, features

    def forward(self, *inputs):
        return self.features(self.model, *inputs)


def tokenizer_of(tokens, max_length: int, pad_length: int | None = None):
    """A copy of a transformers tokenizer's ``tokenizers`` pipeline, truncating at ``max_length`` and padding to
    the longest sentence (or to ``pad_length``) with its pad token, as its call does; None for a Python-only
    tokenizer, which ``tokenizers`` cannot read."""
    if not getattr(tokens, "is_fast", False):
        return None
    backend = type(tokens.backend_tokenizer).from_str(tokens.backend_tokenizer.to_str())
    backend.enable_truncation(max_length)
    backend.enable_padding(length=pad_length, pad_id=tokens.pad_token_id, pad_token=tokens.pad_token)
    return backend


def text_graph(indexer: Indexer) -> TextGraph | None:
    """The family's graph of ``indexer``'s text tower, None when it has none that exports."""
    build = getattr(indexer, "text_graph", None)
    return build() if callable(build) else None


def export(indexer: Indexer, root: Path | None = None) -> tuple[OnnxTextTower | None, TowerManifest | None]:
    """Export ``indexer``'s text tower into its folder under ``root`` (the user's cache by default), check it,
    and return the tower (None when its check failed) and its manifest (None when it cannot be exported)."""
    folder = folder_of(indexer.model_id, indexer.name, indexer.source, root)
    graph = text_graph(indexer) if folder is not None else None
    if graph is None:
        return None, None
    staging = Path(tempfile.mkdtemp(prefix=".export-", dir=_parent(folder)))
    try:
        manifest = _export_into(indexer, graph, staging)
        _publish(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    tower = OnnxTextTower(folder, manifest) if manifest.usable else None
    return tower, manifest


def _export_into(indexer: Indexer, graph: TextGraph, folder: Path) -> TowerManifest:
    encodings = graph.tokenizer.encode_batch(list(PROBES))
    tensors = {"input_ids": torch.tensor([e.ids for e in encodings], dtype=torch.long),
               "attention_mask": torch.tensor([e.attention_mask for e in encodings], dtype=torch.long)}
    dynamic = {name: {0: "batch", 1: "tokens"} for name in graph.inputs}
    module = _cpu_fp32(graph.module).eval()
    traced = folder / "traced.onnx"
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on Python branches it fixed: the check below decides
        torch.onnx.export(module, tuple(tensors[name] for name in graph.inputs), str(traced),
                          input_names=list(graph.inputs), output_names=["features"],
                          dynamic_axes={**dynamic, "features": {0: "batch"}}, opset_version=OPSET, dynamo=False)
    _weights_beside(traced, folder / GRAPH)
    graph.tokenizer.save(str(folder / TOKENIZER))
    draft = TowerManifest(indexer.model_id, indexer.name, indexer.source, indexer.kind, int(indexer.dim),
                          graph.inputs, 1.0, _versions())
    draft.write(folder)
    ours = OnnxTextTower(folder, draft).embed_texts(PROBES)
    theirs = np.asarray(indexer.embed_texts(list(PROBES)), np.float32)
    cosine = float(np.min(np.sum(ours.astype(np.float64) * theirs, axis=1)))
    manifest = TowerManifest(**{**draft.__dict__, "cosine": cosine})
    if not manifest.usable:  # kept: only the record that this model answers in torch
        for path in (folder / GRAPH, folder / (GRAPH + ".data")):
            path.unlink()
    manifest.write(folder)
    return manifest


def _weights_beside(traced: Path, graph: Path) -> None:
    """Save the graph with its weights in a file of their own: ONNX Runtime maps that file instead of parsing
    and copying it, which makes a session start several times faster and smaller."""
    import onnx

    model = onnx.load(str(traced))
    onnx.save_model(model, str(graph), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=graph.name + ".data", size_threshold=1024)
    traced.unlink()


def _publish(staging: Path, folder: Path) -> None:
    """Move the finished export into place; a run that finished first keeps its folder (the same export)."""
    try:
        staging.rename(folder)
    except OSError:
        if not (folder / MANIFEST).is_file():  # a broken leftover: replace it
            shutil.rmtree(folder, ignore_errors=True)
            staging.rename(folder)


def _parent(folder: Path) -> Path:
    folder.parent.mkdir(parents=True, exist_ok=True)
    return folder.parent


def _cpu_fp32(module: torch.nn.Module) -> torch.nn.Module:
    """The graph is exported as run on a CPU: a model on a GPU or in half precision is copied there first."""
    if all(p.device.type == "cpu" and p.dtype == torch.float32 for p in module.parameters()):
        return module
    import copy

    return copy.deepcopy(module).to("cpu", torch.float32)


def _versions() -> dict:
    found = {}
    for package in ("torch", "onnxruntime", "tokenizers", "transformers", "open_clip_torch"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            continue
    return found
