"""A commit is final: what the run does after storing a file (reporting it to a progress callback that raises, a
reader of its output that has gone) never marks that file failed; the run stops there and the next one resumes."""

import pytest

from retrieval.pipeline.distribute import SerialDistributor
from retrieval.pipeline.settings import IndexSettings


class Gone(Exception):
    """The caller's own exception, raised from its progress callback."""


def raising_on_first_file(error: BaseException):
    reported = []

    def progress(event: str, data: dict) -> None:
        if event == "file":
            reported.append(data["path"])
            raise error

    return progress, reported


def statuses(engine) -> dict[str, tuple[str, str | None]]:
    return {f.path: (f.status, f.error) for f in engine.files()}


@pytest.mark.parametrize("error", [Gone("the caller stops here"), BrokenPipeError(32, "Broken pipe")],
                         ids=["caller", "broken-pipe"])
def test_a_raising_progress_callback_stops_the_run_and_leaves_the_stored_file_stored(engine, video_folder, error):
    progress, reported = raising_on_first_file(error)
    with pytest.raises(type(error)):
        engine.index(video_folder, [engine.spec], IndexSettings(), progress=progress,
                     distributor=SerialDistributor())
    assert statuses(engine) == {reported[0]: ("ok", None)}
    assert len(reported) == 1  # the callback heard of one stored file, and the run stopped there

    report = engine.index(video_folder, [engine.spec], IndexSettings(), distributor=SerialDistributor())
    assert report.unchanged == 1 and report.indexed == 3 and report.failed == []  # the stored file is not redone
    assert set(statuses(engine).values()) == {("ok", None)} and len(statuses(engine)) == 4


def test_a_callback_raising_after_a_failure_keeps_the_failure_recorded(engine, video_folder):
    (video_folder / "broken.mp4").write_bytes(b"\x00" * 5000)

    def progress(event: str, data: dict) -> None:
        if event == "file" and not data["ok"]:
            raise Gone("the caller stops here")

    with pytest.raises(Gone):
        engine.index(video_folder, [engine.spec], IndexSettings(), progress=progress,
                     distributor=SerialDistributor())
    listed = statuses(engine)
    assert listed.pop("broken.mp4")[0] == "failed"
    assert set(listed.values()) <= {("ok", None)}
