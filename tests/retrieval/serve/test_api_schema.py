"""``/openapi.json`` is the API's contract: generated requests, valid and invalid, get only answers it describes,
for every operation of a server that takes writes (``--allow-writes``), one by one and chained by the schema's
links (the stateful phase).

Seeded and bounded so it is a quick, repeatable part of the suite; each app works on a scratch copy of the example
index (writes add, remove and re-index there, never in the shared one), and the index runs it starts have ended,
or been stopped, before its test does.  The full fuzzing run is ``schemathesis run --checks all
http://localhost:8000/openapi.json`` against a running ``convis serve --allow-writes`` over a copy of an index.
"""

import json
import os
import shutil
import signal
import time
from collections import Counter
from pathlib import Path

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ensure_resource_availability,
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
    use_after_free,
)

from retrieval.serve.index_job import RUNNER
from retrieval.serve.server import create_app
from tests.indexes import scratch_index

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          positive_data_acceptance, negative_data_rejection]
STATEFUL_CHECKS = [*CHECKS, use_after_free, ensure_resource_availability]
READS = ["GET /health", "GET /videos", "GET /collection", "POST /uploads", "POST /query", "POST /compare", "POST /diff",
         "GET /search", "GET /strips/{ref}", "GET /thumbs/{ref}", "GET /media/{ref}", "GET /previews/{ref}",
         "GET /evidence/{ref}", "GET /frame/{ref}", "POST /export/gallery", "GET /fields",
         "GET /dupes", "GET /lines/{ref}"]
CHANGES = ["POST /index/files", "DELETE /files/{ref}", "POST /files/{ref}/restore", "POST /files/{ref}/tags",
           "POST /index/runs"]
WRITES = ["GET /index/job", *CHANGES]
OPERATIONS = READS + WRITES
LOCAL = "http://localhost"  # the app answers loopback host names only (see guards.py)
RUN_DEADLINE_S = 120  # a re-index of the example clips takes about a second: a stuck run fails the test
SCENARIOS, STEPS = 10, 6


def accepting(path: str, *statuses: str) -> dict:
    return {"include-path-regex": path, "checks": {"positive_data_acceptance": {"expected-statuses": ["2xx",
                                                                                                      *statuses]}}}


# a valid request is accepted: 2xx, or 404 for a well-formed name of nothing; beyond that, what no schema can say:
# an upload's bytes must be a video (415); a search, and a query with a change, are refused with 400 when no
# indexed signal reads text (this index holds EfficientNet-Lite0 alone), and /diff when the server has no LMM; a
# time span may lie outside its clip and a concept may be a likely typo (400); a change to the index waits while
# another is made (409)
CONFIG = {"checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", "404"]}},
          "operations": [accepting("^/uploads$", "415"),
                         accepting("^/search$", "400"),
                         accepting("^/dupes$", "400"),  # an indexer this index lacks, a filter's unknown field
                         accepting("^/(query|compare|diff|export/gallery|strips/|thumbs/|frame/)", "400", "404"),
                         accepting("^/(index/files|files/)", "404", "409"),
                         accepting("^/index/runs$", "409")]}


def settled(app, index_dir: Path) -> None:
    """Wait for the index run ``app`` started last to end; then no run of ``index_dir`` may still be going."""
    client = TestClient(app, base_url=LOCAL)
    deadline = time.monotonic() + RUN_DEADLINE_S
    while client.get("/index/job").json()["state"] == "running":
        assert time.monotonic() < deadline, "an index run did not end"
        time.sleep(0.05)
    assert not index_runs(index_dir), "an index run outlived its job"


def fresh_copy(kept: Path, videos: Path, tries: int = 5) -> None:
    """``videos`` replaced by a copy of ``kept``. The last scenario's app may still be finishing a write into its
    index folder for a moment after its teardown (a loaded machine stretches it): then the copy is made again."""
    for attempt in range(tries):
        shutil.rmtree(videos, ignore_errors=True)
        try:
            shutil.copytree(kept, videos)
            return
        except (shutil.Error, FileExistsError):
            if attempt == tries - 1:
                raise
            time.sleep(0.2)


def stopped(index_dir: Path) -> None:
    """Stop the index runs of ``index_dir`` as the app stops its own when it shuts down, and wait until they are
    gone."""
    for pid in index_runs(index_dir):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + RUN_DEADLINE_S
    while index_runs(index_dir):
        assert time.monotonic() < deadline, "an index run did not stop"
        time.sleep(0.05)


def index_runs(index_dir: Path) -> list[int]:
    """Processes running an index job on ``index_dir`` (their command lines say so)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # not a process, or gone meanwhile
        if RUNNER.encode() in args and os.fsencode(index_dir) in args:
            found.append(int(proc.name))
    return found


def schema_of(app):
    return schemathesis.openapi.from_asgi("/openapi.json", app, headers={"Host": "localhost"},
                                          config=SchemathesisConfig.from_dict(CONFIG))


@pytest.fixture(scope="module")
def app(example_index, tmp_path_factory):
    index_dir = scratch_index(example_index, tmp_path_factory.mktemp("api-contract"))
    app = create_app(index_dir, allow_writes=True)
    yield app
    settled(app, index_dir)


@pytest.fixture(scope="module")
def operations(app):
    found = (result.ok() for result in schema_of(app).get_all_operations())
    return {f"{op.method.upper()} {op.path}": op for op in found}


def test_every_operation_is_exercised(operations):
    assert sorted(operations) == sorted(OPERATIONS)


def test_every_refusal_is_documented_with_the_one_error_body(app):
    schema = app.openapi()
    assert "HTTPValidationError" not in json.dumps(schema)  # FastAPI's own 422 body: never answered here
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            answers = operation["responses"]
            refusals = {code: answer for code, answer in answers.items() if int(code) >= 400}
            assert all(answer["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorOut"}
                       for answer in refusals.values()), (method, path)
            if operation.get("parameters") or "requestBody" in operation:
                assert "422" in answers, (method, path)
            if "application/json" in operation.get("requestBody", {}).get("content", {}):
                assert "400" in answers, (method, path)  # a body that is not UTF-8 JSON


# invalid requests exist only for operations with inputs
TAKES_INPUT = [name for name in OPERATIONS
               if name not in ("GET /health", "GET /videos", "GET /index/job", "GET /fields")]
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


@pytest.mark.slow
def test_chained_requests_get_only_answers_the_schema_describes(app, example_index, tmp_path):
    """The stateful phase: requests chained by the schema's links (a listed file is played, queried, removed; a
    run started is followed), each answer checked, and checked against what came before (a removed file is gone).
    Each scenario starts from the same copy of the index with an app of its own, and a change waits for the run
    before it: the answers depend on the requests alone, as Hypothesis needs to replay a scenario.  Uploads and
    adding them are left to the tests above: generated bytes are never a video, so nothing follows them."""
    videos = scratch_index(example_index, tmp_path).parent
    kept = shutil.copytree(videos, tmp_path / "kept")  # its catalogs name ``videos`` as their root
    answered = Counter()

    class Workflow(schema_of(app).exclude(path=["/uploads", "/index/files"]).as_state_machine()):
        def setup(self):
            fresh_copy(kept, videos)
            self.app = create_app(videos / ".convis", allow_writes=True)

        def get_call_kwargs(self, case):
            return {"base_url": LOCAL, "app": self.app}

        def before_call(self, case):
            if case.operation.label in CHANGES:  # not refused with 409 only because a run was slow
                settled(self.app, videos / ".convis")

        def after_call(self, response, case):
            super().after_call(response, case)
            answered[case.operation.label, response.status_code] += 1

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            case.validate_response(response, checks=STATEFUL_CHECKS, transport_kwargs=kwargs, recorder=self.recorder)

        def teardown(self):
            # an app used without its lifespan keeps watching the index: stopped here, or its next read would
            # write into the copy the next scenario makes
            self.app.state.convis.kept.close(wait_s=30)
            self.app.state.convis.workers.close()
            stopped(videos / ".convis")

    Workflow.run(settings=settings(max_examples=SCENARIOS, stateful_step_count=STEPS, derandomize=True,
                                   phases=[Phase.generate], deadline=None, database=None,
                                   suppress_health_check=list(HealthCheck)))
    # the chains reached the writes: a listed file asked to be removed (200, or 404 where a scenario removed it
    # already), a run started and followed
    assert {("POST /index/runs", 202), ("GET /index/job", 200)} <= set(answered)
    assert answered["DELETE /files/{ref}", 200] + answered["DELETE /files/{ref}", 404] > 0
