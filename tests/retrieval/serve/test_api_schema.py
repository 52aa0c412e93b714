"""``/openapi.json`` is the API's contract: generated requests, valid and invalid, get only answers it describes.

Seeded and bounded so it is a quick, repeatable part of the suite; the full fuzzing run is
``schemathesis run http://localhost:8000/openapi.json`` against a running ``convis serve``.
"""

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from retrieval.serve.server import create_app

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          positive_data_acceptance, negative_data_rejection]
OPERATIONS = ["GET /health", "GET /videos", "GET /collection", "POST /uploads", "POST /query", "POST /compare",
              "GET /search", "GET /strips/{ref}", "GET /thumbs/{ref}", "GET /media/{ref}", "GET /previews/{ref}",
              "GET /evidence/{ref}", "GET /frame/{ref}", "POST /export/gallery"]
LOCAL = "http://localhost"  # the app answers loopback host names only (see guards.py)
# a valid request is accepted: 2xx, or 404 for a well-formed name of nothing; an upload's bytes must also be a
# video, which no schema can say, so a schema-valid upload may be refused with 415; a search, and a query with a
# change, are refused with 400 when no indexed signal reads text (this index holds EfficientNet-Lite0 alone) or
# the text is only blanks
CONFIG = {"checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", "404"]}},
          "operations": [{"include-path": "/uploads",
                          "checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", "415"]}}},
                         {"include-path": "/search",
                          "checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", "400"]}}},
                         {"include-path": "/query",
                          "checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", "400", "404"]}}},
                         {"include-path": "/export/gallery",
                          "checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", "400", "404"]}}}]}


@pytest.fixture(scope="module")
def api_schema(example_index):
    return schemathesis.openapi.from_asgi("/openapi.json", create_app(example_index), headers={"Host": "localhost"},
                                          config=SchemathesisConfig.from_dict(CONFIG))


@pytest.fixture(scope="module")
def operations(api_schema):
    found = (result.ok() for result in api_schema.get_all_operations())
    return {f"{op.method.upper()} {op.path}": op for op in found}


def test_every_operation_is_exercised(operations):
    assert sorted(operations) == sorted(OPERATIONS)


# invalid requests exist only for operations with inputs
TAKES_INPUT = [name for name in OPERATIONS if name not in ("GET /health", "GET /videos")]
CASES = [(name, GenerationMode.POSITIVE) for name in OPERATIONS] + [(name, GenerationMode.NEGATIVE)
                                                                     for name in TAKES_INPUT]


@pytest.mark.parametrize("name, mode", CASES)
def test_every_answer_is_one_the_schema_describes(operations, name, mode):
    @given(case=operations[name].as_strategy(generation_mode=mode))
    @settings(max_examples=15, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    def answers_conform(case):
        case.call_and_validate(base_url=LOCAL, checks=CHECKS)

    answers_conform()
