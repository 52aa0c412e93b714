"""Each request field's help and bounds are declared once, on the request values: the command line's help, the
server's schema and the request itself say the same thing (``--mode`` above all: it names what the code counts)."""

import dataclasses

import pytest
from typer.testing import CliRunner

from rerankers.base import MODES as RERANK_MODES
from retrieval.cli.app import app as cli
from retrieval.cli.console import brief
from retrieval.search import hybrid
from retrieval.search import request_fields as spec
from retrieval.search.requests import KEEP, LEVELS, CompareRequest, DupesRequest, QueryRequest, SearchRequest
from retrieval.serve.server import create_app


def words(text: str) -> str:
    return " ".join(text.split())


def listed(text: str) -> str:
    """A declared help as the command line lists it: its first sentence and its default's (``brief``)."""
    return words(brief(text))


def cli_help(*command: str) -> str:
    result = CliRunner().invoke(cli, [*command, "--help"], terminal_width=2000)
    assert result.exit_code == 0, result.output
    return words(result.output)


def request_spec(request, name: str):
    return {f.name: f for f in dataclasses.fields(request)}[name].metadata[spec.SPEC]


@pytest.fixture(scope="module")
def schema(example_index):
    return create_app(example_index).openapi()


def parameter(schema: dict, path: str, name: str) -> dict:
    [found] = [p for p in schema["paths"][path]["get"]["parameters"] if p["name"] == name]
    return found


def test_the_search_mode_help_is_one_text_in_the_cli_the_api_schema_and_the_request(schema):
    declared = request_spec(SearchRequest, "mode")
    assert declared is spec.SEARCH_MODE
    assert listed(declared.help) in cli_help("search")
    assert parameter(schema, "/search", "mode")["description"] == declared.help
    # it says what the code does: the modes it takes, and timed lines count towards the hybrid default
    assert declared.choices == hybrid.MODES and "timed lines" in declared.help
    assert parameter(schema, "/search", "mode")["schema"]["anyOf"][0]["pattern"] == "^(vector|keyword|hybrid)$"


def test_the_reranker_mode_help_and_choices_are_the_requests(schema):
    declared = request_spec(QueryRequest, "mode")
    assert declared.choices == RERANK_MODES and listed(declared.help) in cli_help("query")
    assert request_spec(CompareRequest, "mode") is declared and listed(declared.help) in cli_help("compare")
    body = schema["components"]["schemas"]["QueryIn"]["properties"]["mode"]
    assert body["description"] == declared.help and body["enum"] == list(RERANK_MODES)


def test_the_dupes_choices_and_threshold_are_declared_once(schema):
    assert request_spec(DupesRequest, "level").choices == LEVELS and request_spec(DupesRequest, "keep").choices == KEEP
    text = cli_help("dupes")
    for name in ("level", "keep", "threshold"):
        declared = request_spec(DupesRequest, name)
        assert listed(declared.help) in text
        assert parameter(schema, "/dupes", name)["description"] == declared.help
    assert parameter(schema, "/dupes", "keep")["schema"]["pattern"] == "^(longest|resolution|oldest)$"
    threshold = parameter(schema, "/dupes", "threshold")["schema"]["anyOf"][0]
    assert (threshold["exclusiveMinimum"], threshold["maximum"]) == (spec.THRESHOLD.gt, spec.THRESHOLD.le)


def test_the_filters_and_k_read_the_same_bounds_in_both_faces(schema):
    where = parameter(schema, "/search", "where")
    assert where["description"] == spec.WHERE.help and listed(spec.WHERE.help) in cli_help("query")
    assert where["schema"]["maxItems"] == spec.WHERE.max_items
    query_k = schema["components"]["schemas"]["QueryIn"]["properties"]["k"]
    assert (query_k["minimum"], query_k["maximum"]) == (spec.K.ge, spec.K.le)
    refused = CliRunner().invoke(cli, ["search", "x", "-k", str(spec.K.le + 1)])
    assert refused.exit_code == 2


def test_the_search_text_and_concept_say_the_same_in_both_faces(schema):
    text = cli_help("search")
    for name in ("text", "concept"):
        declared = request_spec(SearchRequest, name)
        assert listed(declared.help) in text
        found = parameter(schema, "/search", name)
        assert found["description"] == declared.help
    assert parameter(schema, "/search", "text")["schema"]["maxLength"] == spec.TEXT.max_chars == 1000
