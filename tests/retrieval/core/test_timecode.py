import pytest

from retrieval.core.timecode import TimeFormatError, format_span, format_time, parse_time


@pytest.mark.parametrize("text, seconds", [
    ("80", 80), ("80s", 80), ("2.5", 2.5), ("1m20s", 80), ("1m", 60), ("1h2m", 3720), ("1M20S", 80),
    ("1:20", 80), ("00:02", 2), ("0:01:20.5", 80.5), ("1:02:03", 3723), (" 1m 20s ", 80),
])
def test_parse_time_reads_what_people_type(text, seconds):
    assert parse_time(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "abc", "1:2:3:4", "-5", "1:75", "1x", "m", "1:00:75"])
def test_parse_time_refuses_what_is_not_a_time(text):
    with pytest.raises(TimeFormatError, match="not a time"):
        parse_time(text)


@pytest.mark.parametrize("seconds, text", [
    (0, "0:00.0"), (8.1039, "0:08.1"), (80, "1:20.0"), (59.99, "1:00.0"), (5.28, "0:05.3"), (3723.5, "1:02:03.5"),
])
def test_format_time_is_one_clock_format(seconds, text):
    assert format_time(seconds) == text


def test_format_time_reads_back_as_the_same_tenth():
    for seconds in (0.3, 7.7, 61.2, 599.9, 3600.0, 4000.4):
        assert parse_time(format_time(seconds)) == pytest.approx(seconds, abs=0.05)


def test_format_span_names_an_open_end():
    assert format_span(50, 60) == "0:50.0-1:00.0"
    assert format_span(20, None) == "0:20.0-end"
