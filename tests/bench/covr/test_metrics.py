"""TF-CoVR's metric (bench.covr.metrics) on hand-worked cases, against a plain-loop implementation, and against a
verbatim copy of the benchmark's own ``compute_metrics`` (UCF-CRCV/TF-CoVR, src/test/aim/circo_clip.py)."""

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.covr.metrics import (
    CovrQuery,
    average_precision_at_k,
    covr_metrics,
    mask_query,
    read_annotations,
    read_ranking,
    recall_at_k,
    video_id,
)
from bench.loaders import BenchDataError
from retrieval.core.user_files import DATA_FILE_LIMIT

HEADER = "query_id,query_video,target_video,target_videos_ids,modification\n"


def q(query_id, query_video, target_video, targets, modification="m"):
    return CovrQuery(query_id, query_video, target_video, tuple(targets), modification)


# ---------------------------------------------------------------- AP@K by hand


def test_ap_when_fewer_targets_than_k():
    # rel = 0 1 0 1 0; P@2 = 1/2, P@4 = 2/4; sum = 1.0; / min(|G|=2, K=5) = 2  ->  0.5
    assert average_precision_at_k(["x", "a", "y", "b", "z"], ("a", "b"), 5) == pytest.approx(0.5)
    # K beyond the ranking's length changes nothing: still 1.0 / min(2, 10)
    assert average_precision_at_k(["x", "a", "y", "b", "z"], ("a", "b"), 10) == pytest.approx(0.5)
    # K = 1: rel(1) = 0 -> 0
    assert average_precision_at_k(["x", "a", "y", "b", "z"], ("a", "b"), 1) == 0.0


def test_ap_when_more_targets_than_k():
    # |G| = 7 > K = 5; rel = 1 0 1 1 0; P@1 = 1, P@3 = 2/3, P@4 = 3/4; sum = 29/12; / min(7, 5) = 5 -> 29/60
    targets = ("a", "b", "c", "d", "e", "f", "g")
    assert average_precision_at_k(["a", "x", "b", "c", "y"], targets, 5) == pytest.approx(29 / 60)


def test_ap_perfect_and_no_hit():
    # both targets first: (1/1 + 2/2) / min(2, 5) = 1
    assert average_precision_at_k(["a", "b", "x"], ("a", "b"), 5) == pytest.approx(1.0)
    assert average_precision_at_k(["x", "y", "z"], ("a",), 5) == 0.0
    assert average_precision_at_k([], ("a",), 5) == 0.0


def test_repeated_ids_count_every_time_as_in_the_code():
    # TF-CoVR's gallery has one entry per annotation row, so a video can come back twice; np.isin marks both.
    # rel = 1 1 0; P@1 = 1, P@2 = 2/2 = 1; sum = 2; / min(|G|=1, 5) = 1 -> 2.0 (AP above 1)
    assert average_precision_at_k(["a", "a", "x"], ("a",), 5) == pytest.approx(2.0)
    # Recall sums the matches: the target twice in the top 5 counts 2
    assert recall_at_k(["a", "a", "x"], "a", 5) == 2.0
    # a target listed twice makes |G| = len(list) = 2: (1/1) / min(2, 5) = 0.5
    assert average_precision_at_k(["a", "x"], ("a", "a"), 5) == pytest.approx(0.5)


def test_masking_the_query_video_moves_everything_after_it_up():
    ranked = ["v", "a", "x", "b"]
    masked = mask_query(ranked, "v")
    assert masked == ["a", "x", "b"]
    # masked: rel = 1 0 | AP@2 = (1/1) / min(2, 2) = 0.5; unmasked it would be (1/2) / 2 = 0.25
    assert average_precision_at_k(masked, ("a", "b"), 2) == pytest.approx(0.5)
    assert average_precision_at_k(ranked, ("a", "b"), 2) == pytest.approx(0.25)
    # masked AP@5: P@1 = 1, P@3 = 2/3 -> (5/3) / 2 = 5/6
    assert average_precision_at_k(masked, ("a", "b"), 5) == pytest.approx(5 / 6)
    # every copy goes, and only the query's video
    assert mask_query(["v", "a", "v", "v2"], "v") == ["a", "v2"]


def test_recall_counts_only_the_single_target_video():
    ranked = ["b", "x", "a"]
    assert recall_at_k(ranked, "a", 2) == 0.0  # "b" is a valid target but not the target_video
    assert recall_at_k(ranked, "a", 3) == 1.0
    assert recall_at_k(ranked, "b", 1) == 1.0


# ---------------------------------------------------------------- whole runs by hand


def three_queries():
    queries = [q("0", "v1", "t1", ["t1", "t2"]), q("1", "v2", "t3", ["t3"]), q("2", "v3", "t4", ["t4"])]
    ranking = {
        "0": ["v1", "t1", "x", "t2"],  # masked: t1 x t2 -> AP@K = (1 + 2/3) / 2 = 5/6 for K >= 3; R@K = 1
        "1": ["y", "z", "w", "u", "s", "t3"],  # t3 at 6: AP@5 = 0, AP@10 = (1/6) / 1; R@5 = 0, R@10 = 1
        "9": ["t1"],  # not an annotated query: ignored, counted as unknown
    }  # query "2" is missing: 0 everywhere
    return queries, ranking


def test_metrics_by_hand():
    queries, ranking = three_queries()
    result = covr_metrics(queries, ranking)
    # mAP@5 = (5/6 + 0 + 0) / 3 = 5/18 = 0.27777 -> 27.78; mAP@10 = (5/6 + 1/6 + 0) / 3 = 1/3 -> 33.33
    assert result["mAP@5"] == 27.78
    assert result["mAP@10"] == result["mAP@25"] == result["mAP@50"] == 33.33
    # Recall@5 = (1 + 0 + 0) / 3 -> 33.33; Recall@10 = (1 + 1 + 0) / 3 -> 66.67
    assert result["Recall@5"] == 33.33
    assert result["Recall@10"] == result["Recall@25"] == result["Recall@50"] == 66.67
    assert result["queries"] == 3 and result["ranked"] == 2
    assert result["missing"] == ["2"] and result["unknown"] == 1 and result["repeated_ids"] == 0


def test_rounding_is_of_the_mean_times_100_to_two_decimals():
    # |G| = 3, hits at 1 and 2: AP@5 = (1/1 + 2/2) / min(3, 5) = 2/3; a third query has no hit.
    # mean = (2/3 + 2/3 + 0) / 3 = 4/9 -> 44.444... -> 44.44 (rounding each query first, 66.67 + 66.67 + 0,
    # would give 44.45). Recall@5: the target_video "a" is in two of three -> 66.666... -> 66.67 (not cut to 66.66)
    queries = [q(name, "q" + name, "a", ["a", "b", "c"]) for name in "xyz"]
    result = covr_metrics(queries, {"x": ["a", "b"], "y": ["b", "a"], "z": ["d"]}, ks=(5,))
    assert result["mAP@5"] == 44.44 and result["Recall@5"] == 66.67
    assert set(result) >= {"mAP@5", "Recall@5"} and "mAP@10" not in result


def test_duplicates_reported_and_scored_as_the_code_does():
    result = covr_metrics([q("a", "qa", "t", ["t"])], {"a": ["t", "t", "qa", "x"]}, ks=(5,))
    assert result["mAP@5"] == 200.0 and result["Recall@5"] == 200.0 and result["repeated_ids"] == 1


def test_no_queries_is_an_error():
    with pytest.raises(BenchDataError):
        covr_metrics([], {})


# ---------------------------------------------------------------- files


def test_video_ids_lose_folder_and_mp4():
    assert video_id("FineGD_videos/09_57.mp4") == "09_57"
    assert video_id(" 0LtLS9wROrk_E_002407_002435_A_0003_0005 ") == "0LtLS9wROrk_E_002407_002435_A_0003_0005"
    assert video_id("a.MP4") == "a"


def test_read_annotations(tmp_path):
    path = tmp_path / "test.csv"
    path.write_text("extra,modification,target_videos_ids,target_video,query_video,query_id\n"
                    "z,\"do 2.5 turns, not 1\",\"['t1.mp4', 't2']\",t1,videos/v1.mp4,7\n"
                    "z,m,\"['t3']\",t3.mp4,v2,8\n")
    first, second = read_annotations(path)
    assert first == CovrQuery("7", "v1", "t1", ("t1", "t2"), "do 2.5 turns, not 1")
    assert second.targets == ("t3",) and second.target_video == "t3"


@pytest.mark.parametrize("cell", ["['a', 'b'", "a, b", "[]", "['a', ['b']]", "{'a': 1}"])
def test_unparsable_targets_name_the_row(tmp_path, cell):
    path = tmp_path / "a.csv"
    path.write_text(HEADER + "0,v,t,\"['t']\",m\n" + f"5,v,t,\"{cell}\",m\n")
    with pytest.raises(BenchDataError, match=r"line 3 \(query_id 5\): target_videos_ids"):
        read_annotations(path)


def test_missing_column_is_named(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("query_id,query_video,target_video,modification\n0,v,t,m\n")
    with pytest.raises(BenchDataError, match="lack column.*target_videos_ids"):
        read_annotations(path)


def test_bad_annotation_files(tmp_path):
    with pytest.raises(BenchDataError, match="not found"):
        read_annotations(tmp_path / "none.csv")
    empty = tmp_path / "empty.csv"
    empty.write_text(HEADER)
    with pytest.raises(BenchDataError, match="no queries"):
        read_annotations(empty)
    twice = tmp_path / "twice.csv"
    twice.write_text(HEADER + "0,v,t,\"['t']\",m\n0,w,t,\"['t']\",m\n")
    with pytest.raises(BenchDataError, match="more than once"):
        read_annotations(twice)


def test_annotations_past_the_data_limit_are_refused_after_reading_the_limit(tmp_path):
    # the limit is the one every benchmark data file has (64 MiB); a sparse file costs no disk
    big = tmp_path / "big.csv"
    with big.open("wb") as fh:
        fh.write(HEADER.encode())
        fh.truncate(DATA_FILE_LIMIT + 1)
    with pytest.raises(BenchDataError, match=r"^annotations .*big\.csv is larger than 64 MiB"):
        read_annotations(big)


def test_a_row_the_csv_reader_refuses_is_named_by_its_line(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text(HEADER + "0,v,t,\"['t']\",m\n" + f"1,v,t,\"['t']\",{'x' * 200_000}\n")
    with pytest.raises(BenchDataError, match=r"^cannot read annotations .*a\.csv, line 3: field larger"):
        read_annotations(path)


def test_read_ranking(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"0": ["a.mp4", "dir/b.mp4", "c"], "1": []}')
    assert read_ranking(path) == {"0": ["a", "b", "c"], "1": []}
    for text, message in [("{", "not valid JSON"), ('["a"]', "not a JSON object"), ('{"0": "a"}', "'0'"),
                          ('{"0": [null]}', "'0'")]:
        path.write_text(text)
        with pytest.raises(BenchDataError, match=message):
            read_ranking(path)


# ---------------------------------------------------------------- random cases


def loop_metrics(queries, ranking, ks):
    """Straightforward: drop the query video, walk the top K, add hits/rank at each hit; count target copies."""
    out = {}
    for k in ks:
        ap_total = 0.0
        recall_total = 0.0
        for query in queries:
            ranked = []
            for video in ranking.get(query.query_id, []):
                if video != query.query_video:
                    ranked.append(video)
            hits = 0
            ap = 0.0
            for position, video in enumerate(ranked[:k], start=1):
                if video in query.targets:
                    hits += 1
                    ap += hits / position
                if video == query.target_video:
                    recall_total += 1
            ap_total += ap / min(len(query.targets), k)
        out[f"mAP@{k}"] = ap_total / len(queries) * 100
        out[f"Recall@{k}"] = recall_total / len(queries) * 100
    return out


videos = st.sampled_from([f"v{i}" for i in range(12)])


@st.composite
def cases(draw):
    n = draw(st.integers(1, 6))
    queries, ranking = [], {}
    for i in range(n):
        targets = draw(st.lists(videos, min_size=1, max_size=6))
        query = q(str(i), draw(videos), draw(st.one_of(st.sampled_from(targets), videos)), targets)
        queries.append(query)
        if draw(st.booleans()) or i == 0:
            ranking[str(i)] = draw(st.lists(videos, max_size=30))
    return queries, ranking


@settings(max_examples=200, deadline=None)
@given(cases(), st.lists(st.integers(1, 30), min_size=1, max_size=4, unique=True))
def test_matches_a_plain_loop(case, ks):
    queries, ranking = case
    result = covr_metrics(queries, ranking, ks=tuple(ks))
    expected = loop_metrics(queries, ranking, ks)
    for key, value in expected.items():
        assert result[key] == pytest.approx(value, abs=0.0051)  # rounded to 2 decimals
    assert result["missing"] == [x.query_id for x in queries if x.query_id not in ranking]


# ---------------------------------------------------------------- the benchmark's own code


def tfcovr_compute_metrics(dataset, predictions_dict, ranks=[5, 10, 25, 50]):  # noqa: B006 (as released)
    """UCF-CRCV/TF-CoVR src/test/aim/circo_clip.py ``compute_metrics``, verbatim but for comments."""
    aps_atk = defaultdict(list)
    recalls_atk = defaultdict(list)
    for query_id, predictions in predictions_dict.items():
        target = dataset.get_target_img_ids(int(query_id))
        gt_img_ids = target["gt_img_ids"]
        target_img_id = target["target_img_id"]
        predictions = np.array(predictions, dtype=int)
        gt_img_ids = np.array(gt_img_ids, dtype=int)
        ap_labels = np.isin(predictions, gt_img_ids)
        precisions = np.cumsum(ap_labels, axis=0) * ap_labels
        precisions = precisions / np.arange(1, ap_labels.shape[0] + 1)
        for rank in ranks:
            aps_atk[rank].append(float(np.sum(precisions[:rank]) / min(len(gt_img_ids), rank)))
        recall_labels = predictions == target_img_id
        for rank in ranks:
            recalls_atk[rank].append(float(np.sum(recall_labels[:rank])))
    ap_atk = {}
    recall_atk = {}
    for rank in ranks:
        ap_atk[rank] = round(float(np.mean(aps_atk[rank])) * 100, 2)
        recall_atk[rank] = round(float(np.mean(recalls_atk[rank])) * 100, 2)
    return ap_atk, recall_atk


class StubDataset:
    """What compute_metrics asks of FineGDDataset: row index -> target index and gt indexes (as strings)."""

    def __init__(self, queries):
        self.queries = queries

    def get_target_img_ids(self, index):
        row = self.queries[index]
        return {"target_img_id": int(row.target_video[1:]), "gt_img_ids": [str(int(v[1:])) for v in row.targets]}


@settings(max_examples=200, deadline=None)
@given(cases())
def test_equals_the_released_compute_metrics(case):
    queries, ranking = case
    full = {x.query_id: ranking.get(x.query_id, []) for x in queries}  # the code ranks every row
    # the code masks before ranking (sims -= 100 * mask) and keeps the top 50
    predictions = {x.query_id: [int(v[1:]) for v in mask_query(full[x.query_id], x.query_video)][:50]
                   for x in queries}
    ap, recall = tfcovr_compute_metrics(StubDataset(queries), predictions)
    result = covr_metrics(queries, full)
    assert {k: result[f"mAP@{k}"] for k in ap} == ap
    assert {k: result[f"Recall@{k}"] for k in recall} == recall
