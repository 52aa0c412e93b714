"""One exception base: every exception convis defines is a ConvisError that says what it means to each face (an
exit code for the CLI, an HTTP status for the server), keeps its builtin base for ``except ValueError`` and the
like, and the CLI and the server each turn one into its line through one handler."""

import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from bench.loaders import BenchDataError
from bench.viddiff.judge import UnreadableAnswer
from bench.viddiff.run import SampleSkipped
from indexers.errors import ModelUnavailableError
from rerankers.base import RerankerError, RerankerUnavailable
from rerankers.prompts.diff import DiffInputError
from retrieval.api import Engine, NoIndexError, NotIndexedError
from retrieval.cli.app import app, failed
from retrieval.cli.options import UserError
from retrieval.core.concepts import CloseToConcept, ConceptError
from retrieval.core.errors import ConvisError
from retrieval.core.pixels import SizeError
from retrieval.core.registry import UnknownModelError
from retrieval.core.segmentation import SegmentationError
from retrieval.core.timecode import TimeFormatError
from retrieval.media.frames import BackendUnavailable, DecodeError, FileChanged, SpanError
from retrieval.media.preview import PreviewError
from retrieval.pipeline.describe_run import NoCaptionerError
from retrieval.pipeline.distribute import TaskFailed
from retrieval.pipeline.guard import MainGuardError
from retrieval.pipeline.ray_pipeline import RayUnavailable, RemoteFailure
from retrieval.search.anchor import AnchorError, AnchorSpanError
from retrieval.search.compose import ChangeError
from retrieval.search.fusion import FusionError
from retrieval.search.signals import SignalError
from retrieval.search.text_query import NoTextSignal
from retrieval.serve.errors import ApiError
from retrieval.store.errors import CatalogBusy, CatalogDamaged, CatalogEmpty, DiskFull, IndexSettingsError
from tests.paths import ROOT

PACKAGES = ("retrieval", "indexers", "rerankers", "bench")

# class: (exit code, HTTP status, the builtin base it keeps); the faces' answers before they read these
# attributes (the CLI's exit 2 list, the server's 400/503 handlers), and 1 / 500 for the system's own failures
FACES = {
    UserError: (2, 400, Exception),
    NoCaptionerError: (2, 400, ValueError),
    TaskFailed: (1, 500, Exception),
    MainGuardError: (1, 500, SystemExit),
    RayUnavailable: (2, 503, RuntimeError),
    RemoteFailure: (1, 500, Exception),
    IndexSettingsError: (2, 400, ValueError),
    FusionError: (2, 400, ValueError),
    SignalError: (2, 400, ValueError),
    NoTextSignal: (2, 400, ValueError),
    ChangeError: (2, 400, ValueError),
    AnchorError: (2, 400, ValueError),
    AnchorSpanError: (2, 400, ValueError),
    PreviewError: (1, 503, RuntimeError),
    DecodeError: (2, 400, Exception),
    SpanError: (2, 400, Exception),
    FileChanged: (2, 400, Exception),
    BackendUnavailable: (1, 500, ImportError),
    NoIndexError: (2, 503, FileNotFoundError),
    NotIndexedError: (2, 404, LookupError),
    CatalogBusy: (2, 503, RuntimeError),
    CatalogEmpty: (2, 503, RuntimeError),
    CatalogDamaged: (2, 503, RuntimeError),
    DiskFull: (1, 507, OSError),
    TimeFormatError: (2, 400, ValueError),
    UnknownModelError: (2, 503, ValueError),
    SegmentationError: (2, 400, ValueError),
    SizeError: (2, 400, ValueError),
    ConceptError: (2, 400, ValueError),
    CloseToConcept: (2, 400, ValueError),
    ModelUnavailableError: (2, 503, RuntimeError),
    RerankerError: (2, 503, RuntimeError),
    RerankerUnavailable: (1, 503, RuntimeError),
    DiffInputError: (2, 400, ValueError),
    SampleSkipped: (2, 400, Exception),
    UnreadableAnswer: (1, 500, ValueError),
    BenchDataError: (2, 400, ValueError),
}


def project_exceptions() -> set[type[BaseException]]:
    """Every exception class defined in a module of the project (cli.py and all of its packages)."""
    modules = [importlib.import_module("cli")]
    for name in PACKAGES:
        package = importlib.import_module(name)
        modules.append(package)
        found = pkgutil.walk_packages(package.__path__, name + ".")
        modules += [importlib.import_module(module.name) for module in found]
    return {obj for module in modules for obj in vars(module).values()
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__}


def test_every_exception_of_the_project_is_a_convis_error():
    found = project_exceptions()
    assert set(FACES) <= found  # the walk reaches every module
    strays = sorted(f"{kind.__module__}.{kind.__qualname__}" for kind in found if not issubclass(kind, ConvisError))
    assert strays == []
    for kind in found:
        assert kind.exit_code in (1, 2) and 400 <= kind.http_status < 600, kind


@pytest.mark.parametrize("kind", FACES, ids=lambda kind: kind.__name__)
def test_each_error_says_what_it_means_to_each_face_and_keeps_its_builtin_base(kind):
    exit_code, http_status, builtin = FACES[kind]
    assert issubclass(kind, ConvisError) and issubclass(kind, builtin)
    assert (kind.exit_code, kind.http_status) == (exit_code, http_status)


def test_the_builtin_bases_still_work_as_before():
    full = DiskFull("writing the snapshot", "/data/.convis/snapshot.duckdb")
    assert full.errno == 28 and full.filename == "/data/.convis/snapshot.duckdb"
    assert full.public() == ("no space left on device while writing the snapshot; the index is intact as of its last "
                             "committed file: /data/.convis/snapshot.duckdb")
    with pytest.raises(ValueError, match="did you mean location"):
        raise CloseToConcept("locaton", "location")
    with pytest.raises(FileNotFoundError):
        raise NoIndexError("no index at /x")
    assert ApiError(404, "no such file: a.mp4").http_status == 404 and ApiError(503, "x").exit_code == 1


def test_an_uncaught_main_guard_error_still_exits_1_with_its_line_alone():
    assert issubclass(MainGuardError, ConvisError) and MainGuardError("stop").code == "stop"
    code = "from retrieval.pipeline.guard import MainGuardError; raise MainGuardError('convis: example.py line 3')"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "convis: example.py line 3\n")


def test_a_face_may_word_the_remedy_its_own_way():
    typo = CloseToConcept("locaton", "location")
    assert typo.public() == str(typo) and "(use --free-text to ask for it as written)" in typo.public()
    assert typo.public({"free_text": "tick the box,"}).endswith("(tick the box, to ask for it as written)")
    assert TaskFailed("timed out after 3 s").public({"free_text": "tick the box,"}) == "timed out after 3 s"


class Teapot(ConvisError):
    """A failure of a kind no face knows by name."""

    exit_code, http_status = 1, 418
    label = "brewing"
    retry_after = 7


def exits(exc: BaseException, capsys) -> tuple[int, str]:
    with pytest.raises(typer.Exit) as exited:
        failed(exc)
    return exited.value.exit_code, capsys.readouterr().err


def test_the_cli_answers_any_convis_error_with_its_line_and_its_exit_code(capsys):
    assert exits(Teapot("the pot is cold"), capsys) == (1, "error: the pot is cold\n")
    assert exits(TaskFailed("timed out after 3 s"), capsys) == (1, "error: timed out after 3 s\n")
    assert exits(TimeFormatError("not a time:\n  'x'"), capsys) == (2, "error: not a time: 'x'\n")
    assert exits(NoIndexError("no index at /x"), capsys) == (2, "error: no index at /x\n")
    assert exits(DiskFull("writing the FAISS index", "/x/a.faiss"), capsys) == (
        1, "error: no space left on device while writing the FAISS index; the index is intact as of its last "
           "committed file: /x/a.faiss\n")
    assert exits(FileNotFoundError("no such folder: /x"), capsys) == (2, "error: no such folder: /x\n")


def test_a_command_that_meets_a_convis_error_prints_one_line(tmp_path, monkeypatch):
    index = tmp_path / ".convis"
    index.mkdir()
    (index / "catalog.duckdb").touch()  # where an index is looked for; the failure comes first

    def fails(_engine, *_args):
        raise TaskFailed("decoder crashed: its worker process died")

    monkeypatch.setattr(Engine, "info", fails)
    result = CliRunner().invoke(app, ["info", "--index-dir", str(index)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert result.stderr == "error: decoder crashed: its worker process died\n" and result.stdout == ""


def test_the_server_answers_any_convis_error_with_its_status_and_line(example_index, monkeypatch):
    from retrieval.serve.server import create_app

    raised: list[BaseException] = []

    def fails(_engine, *_args):
        raise raised[-1]

    cases = [
        (Teapot("the pot is cold"), 418, "brewing: the pot is cold; retry in a few seconds", "7"),
        (FusionError("no fusion model for 'location'"), 400, "no fusion model for 'location'", None),
        (TaskFailed("timed out after 3 s"), 500, "internal error: timed out after 3 s", None),
        (ModelUnavailableError("no weights"), 503, "model unavailable: no weights", None),
        (CatalogBusy("an index run is writing; retry in a minute"), 503, "an index run is writing; retry in a minute",
         "5"),
        (NoIndexError(f"no index at {Path('/srv/private/videos/.convis')}"), 503, "no index at .convis", None),
        (CloseToConcept("locaton", "location"), 400, "unknown concept 'locaton'; did you mean location? (send "
         '"free_text": true, or tick "free text" in the web UI, to ask for it as written)', None),
        (ApiError(409, "another change to this index is being made"), 409,
         "another change to this index is being made", None),
    ]
    monkeypatch.setattr(Engine, "files", fails)  # /health answers from what the server keeps: /videos asks
    with TestClient(create_app(example_index), base_url="http://localhost") as client:
        for exc, status, line, retry_after in cases:
            raised.append(exc)
            response = client.get("/videos")
            assert (response.status_code, response.json()["error"]) == (status, line), type(exc)
            assert response.headers.get("Retry-After") == retry_after
            assert response.json().get("retry_after") == (None if retry_after is None else int(retry_after))
