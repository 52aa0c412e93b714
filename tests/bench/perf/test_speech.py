"""`convis bench perf --sections speech`: seconds of sound a second for voice detection and for Whisper on the
voiced spans, on generated speech, and no Whisper call on silence; reported and read back."""

from bench.perf.config import Footage, PerfConfig
from bench.perf.markdown import markdown
from bench.perf.report import PerfReport
from bench.perf.speech import SENTENCES, run_speech

MACHINE = {"date": "", "cpus": 2, "memory_gb": 1, "python": "", "torch": "", "torch_threads": 1, "faiss": "",
           "faiss_threads": 1, "blas_threshold": 20, "load_before": ""}


def test_speech_is_measured_and_silence_costs_no_whisper_call(tmp_path):
    config = PerfConfig.smoke_run(sections=("speech",))
    mixed, quiet = run_speech(config, Footage(tmp_path, tmp_path, []), lambda message: None)
    assert mixed.audio_s == quiet.audio_s == 12.0
    # each sentence is heard as its own voiced span: the tones and silences between them are not
    assert mixed.spans >= len(SENTENCES) and mixed.calls == mixed.spans and 0 < mixed.voiced_s < mixed.audio_s / 2
    assert (quiet.spans, quiet.calls, quiet.lines, quiet.voiced_s) == (0, 0, 0, 0)
    assert mixed.vad_audio_per_s > mixed.audio_per_s > 0
    report = PerfReport(MACHINE, {}, speech=[mixed, quiet])
    assert PerfReport.from_dict(report.as_dict()).speech == [mixed, quiet]
    assert "## Speech" in markdown(report) and "tiny random Whisper" in markdown(report)
