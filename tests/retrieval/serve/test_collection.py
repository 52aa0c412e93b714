"""The collection's pages: files whose folder was offline at the last run are neither failed nor indexed units."""

from types import SimpleNamespace

import pytest

from retrieval.serve.routes.collection import collection_page


def listed(path, status, error=None):
    return SimpleNamespace(path=path, status=status, error=error, duration=4.0, units=[(None, 0.0, 4.0)],
                           fields={})


FILES = [listed("a.mp4", "ok"), listed("bad.mp4", "failed", "not a video file"),
         listed("nas/b.mp4", "unavailable"), listed("nas/c.mp4", "unavailable")]


def test_counts_tell_failed_and_unavailable_files_apart():
    page = collection_page(FILES, None, "ok", None, 0, 60)
    assert page["counts"] == {"ok": 1, "failed": 1, "unavailable": 2, "removed": 0}
    assert [item["path"] for item in page["items"]] == ["a.mp4"]


@pytest.mark.parametrize("status, paths", [("failed", ["bad.mp4"]), ("unavailable", ["nas/b.mp4", "nas/c.mp4"])])
def test_each_status_lists_only_its_own_files_with_a_reason(status, paths):
    page = collection_page(FILES, None, status, None, 0, 60)
    assert [item["path"] for item in page["items"]] == paths
    assert all(item["error"] for item in page["items"])
