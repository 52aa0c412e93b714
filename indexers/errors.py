"""Why a model could not be built, in one line that says how to fix it (no torch needed to catch it)."""

from __future__ import annotations

from retrieval.core.errors import ConvisError, one_line


class ModelUnavailableError(ConvisError, RuntimeError):
    """Weights could not be loaded; the message says how to provide them."""

    exit_code, http_status = 2, 503  # a server's models are its setup, not the request: 503 like a busy index
    label = "model unavailable"


def unavailable(family: str, source: str, exc: BaseException) -> ModelUnavailableError:
    return ModelUnavailableError(
        f"cannot load {family} weights {source!r} ({one_line(exc)}); download them once with hub access "
        f"(they are cached under HF_HOME) or pass a local weights folder, e.g. --indexer {family}:/path/to/weights"
    )
