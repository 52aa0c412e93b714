"""OpenAPI links: which values of an answer a client passes on to which operation next.

``/openapi.json`` says, for instance, that a path ``GET /videos`` lists is a ``ref`` for ``GET /strips/{ref}``, and
that ``POST /index/runs`` is followed with ``GET /index/job``.  Clients can read the API's workflows from it, and a
stateful checker (schemathesis) chains real requests by it instead of guessing names of nothing.
"""

from __future__ import annotations


def link(method: str, path: str, parameters: dict[str, str] | None = None, body: dict | None = None) -> dict:
    """A link to the operation ``method path``: its ``parameters`` and its request ``body`` fields taken from the
    answer by runtime expressions (``$response.body#/files/0/path``)."""
    pointer = path.replace("~", "~0").replace("/", "~1")
    found: dict = {"operationRef": f"#/paths/{pointer}/{method.lower()}"}
    if parameters:
        found["parameters"] = parameters
    if body:
        found["requestBody"] = body
    return found


def answer_links(status: int, **links: dict) -> dict:
    """``responses=`` entry: the answer ``status`` with its ``links`` by name."""
    return {status: {"links": links}}
