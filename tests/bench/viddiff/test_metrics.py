"""VidDiff closed accuracy and open recall on hand-worked cases, and against a loop written from the rule."""

import random
from pathlib import Path

import pytest

from bench.loaders import BenchDataError
from bench.viddiff.data import VidDiffSample
from bench.viddiff.metrics import Item, closed_accuracy, open_items, open_recall


def sample(key, gt, split="easy", domain="fitness", action="fitness_0", n_open=5):
    return VidDiffSample(sample_key=key, split=split, domain=domain, action=action, action_description="squat",
                         videos=((Path("a.mp4"), (0, 9)), (Path("b.mp4"), None)),
                         differences={k: f"difference {k}" for k in gt}, gt=dict(gt), n_open=n_open)


def test_closed_hand_worked():
    samples = [sample("s0", {"0": "a", "1": "b", "2": "c", "3": "a"}),
               sample("s1", {"0": "b", "1": "a", "2": "b"}, split="hard", domain="diving", action="diving_1")]
    preds = [
        # 0 right; 1 says 'c' (wrong); 2 has gt 'c' (ignored, extra); 3 missing (wrong); 7 names no difference
        {"0": "a", "1": "c", "2": "a", "7": "b"},
        # open-style objects mean their letter: 0 right, 1 'A' is not 'a' (invalid, wrong), 2 right
        {"0": {"description": "", "prediction": "b"}, "1": {"description": "x", "prediction": "A"}, "2": "b"},
    ]
    result = closed_accuracy(samples, preds)
    # scored: s0 keys 0, 1, 3 and s1 keys 0, 1, 2; right: s0/0, s1/0, s1/2
    assert result["overall"] == {"value": 50.0, "correct": 3, "scored": 6}
    assert result["by_split"] == {"easy": {"value": 33.33, "correct": 1, "scored": 3},
                                  "hard": {"value": 66.67, "correct": 2, "scored": 3}}
    assert result["by_action"]["diving_1"] == result["by_split"]["hard"]
    assert (result["missing_predictions"], result["extra_keys"], result["invalid_letters"],
            result["c_predictions"], result["excluded_gt_c"]) == (1, 2, 1, 1, 1)


def test_null_labels_are_not_differences():
    # a null label never reaches VidDiffSample.gt; a prediction for it is an extra key
    s = sample("s0", {"0": "a"})
    result = closed_accuracy([s], [{"0": "a", "1": "b"}])
    assert result["overall"]["scored"] == 1 and result["overall"]["correct"] == 1 and result["extra_keys"] == 1


def test_no_a_or_b_label_is_an_error():
    with pytest.raises(BenchDataError, match="labelled 'a' or 'b'"):
        closed_accuracy([sample("s0", {"0": "c"})], [{"0": "c"}])


def test_object_without_prediction_is_rejected():
    with pytest.raises(BenchDataError, match="without a 'prediction'"):
        closed_accuracy([sample("s0", {"0": "a"})], [{"0": {"description": "x"}}])


def reference_accuracy(samples, preds):
    """The rule in a plain loop: score gt 'a'/'b' only; right iff the given letter equals the label."""
    correct = scored = 0
    by_split = {}
    for s, p in zip(samples, preds, strict=False):
        for key, label in s.gt.items():
            if label not in ("a", "b"):
                continue
            value = p.get(key)
            if isinstance(value, dict):
                value = value["prediction"]
            hit = int(value == label)
            correct, scored = correct + hit, scored + 1
            c, n = by_split.get(s.split, (0, 0))
            by_split[s.split] = (c + hit, n + 1)
    return correct, scored, by_split


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_closed_matches_an_independent_loop_on_random_data(seed):
    rng = random.Random(seed)
    samples, preds = [], []
    for i in range(40):
        gt = {str(k): rng.choice("aabbc") for k in range(rng.randint(1, 8))}
        samples.append(sample(f"s{i}", gt, split=rng.choice(["easy", "medium", "hard"]),
                              domain=rng.choice(["fitness", "diving", "music"]), action=f"act{rng.randint(0, 5)}"))
        pred = {}
        for key in list(gt) + ["98", "99"]:
            roll = rng.random()
            if roll < 0.15:
                continue  # missing
            letter = rng.choice(["a", "b", "c", "A", "x"]) if roll < 0.3 else rng.choice("ab")
            pred[key] = {"description": "", "prediction": letter} if rng.random() < 0.3 else letter
        preds.append(pred)
    if not any(v in "ab" for s in samples for v in s.gt.values()):
        pytest.skip("no scored difference drawn")
    result = closed_accuracy(samples, preds)
    correct, scored, by_split = reference_accuracy(samples, preds)
    assert (result["overall"]["correct"], result["overall"]["scored"]) == (correct, scored)
    assert result["overall"]["value"] == round(100 * correct / scored, 2)
    assert {k: (v["correct"], v["scored"]) for k, v in result["by_split"].items()} == by_split
    for group in ("by_split", "by_domain", "by_action"):
        assert sum(v["correct"] for v in result[group].values()) == correct
        assert sum(v["scored"] for v in result[group].values()) == scored


def items(**letters):
    return {k: Item(f"pred {k}", v) for k, v in letters.items()}


def test_open_recall_with_a_given_matching():
    samples = [sample("s0", {"0": "a", "1": "b", "2": "a", "3": "c"}), sample("s1", {"0": "b"}, split="hard")]
    preds = [items(p0="a", p1="a", p2="b", p3="c"), items(q0="c")]
    # 0 -> right letter; 1 -> flipped; 2 unmatched; 3 (gt 'c') matched but not scored; s1/0 -> 'c'
    matches = [{"0": "p0", "1": "p1", "3": "p3"}, {"0": "q0"}]
    result = open_recall(samples, preds, matches)
    assert result["overall"] == {"value": 25.0, "correct": 1, "scored": 4}
    assert result["errors"] == {"err_nomatch": 25.0, "err_flippedpred": 25.0, "err_is_c": 25.0,
                                "matched_items": 75.0}
    assert result["unmatched"] == 1


def test_open_recall_flips_the_letters_judged_opposite():
    samples = [sample("s0", {"0": "a", "1": "b"})]
    preds = [items(p0="b", p1="b")]
    result = open_recall(samples, preds, [{"0": "p0", "1": "p1"}], opposite=[{"0"}])
    assert result["overall"]["correct"] == 2 and result["errors"]["err_flippedpred"] == 0.0


def test_open_items_cuts_to_n_open_and_says_so():
    s = sample("s0", {"0": "a"}, n_open=2)
    pred = {k: {"description": k, "prediction": "a"} for k in ("5", "1", "9")}
    [kept], notes = open_items([s], [pred])
    assert list(kept) == ["5", "1"]
    assert len(notes) == 1 and "3 predicted differences, at most 2" in notes[0] and "9" in notes[0]


def test_open_items_refuse_letters():
    with pytest.raises(BenchDataError, match="open mode needs"):
        open_items([sample("s0", {"0": "a"})], [{"0": "a"}])
