"""How a run measured: the notes under every report."""

from __future__ import annotations

from bench.perf.config import PerfConfig
from bench.perf.search import MIXTURE_COMPONENTS
from bench.perf.serve_load import ALONE_RUNS, WRITER_BATCH


def notes(config: PerfConfig) -> list[str]:
    """What each number means and how it was taken: the last section of every page."""
    out = [
        "Times are wall-clock on a shared machine; indexing and reranking rows are the median of "
        f"{config.repeat} run(s), each in a fresh process" + ("" if config.isolate else " (smoke: in-process)") + ".",
        "Peak RSS is sampled every 10 ms over the measuring process and its children (decode workers), "
        "floored by the process's own ru_maxrss.",
        "decode, sampled: `decode_job` as a pipeline worker runs it (probe, decode the sampled frames resized "
        "in the decoder, content hash), one process. decode, every frame: the paper's extraction reads a video as "
        "decord `VideoReader(path, ctx=cpu(0)).get_batch(range(len))` (full-size RGB, every frame held, decord's "
        "default threads); PyAV decodes every frame to RGB likewise. decode, every frame, streamed: the cheapest "
        "every-frame decode (one thread, frame by frame, only the sampled frames kept and resized: the same frames "
        "ours hands the model).",
        "embed: the indexer on already-decoded frames, one call per file. end-to-end, sampled: a real `IndexRun` "
        "(worker-process decoding with one task queued ahead, embedding, DuckDB writes, FAISS rebuild) into a "
        "fresh catalog; end-to-end, every frame: the paper's DINOv2/CLIP extraction (decode every frame, embed "
        "every frame, average), in one process, measured once with the first decoder.",
        f"Recall: {MIXTURE_COMPONENTS}-component Gaussian mixture of unit vectors (random centre + rank-16 "
        "subspace + isotropic noise), held-out queries from the same mixture; recall@100 against exact "
        "inner-product search; indices built through `VectorIndex.build` (IDMap2 wrapper). Batch-1 searches run "
        "on one OpenMP thread (VectorIndex does this below 20 queries), batches on all cores. "
        "convis lowers `faiss.cvar.distance_compute_blas_threshold` to 20 for batches of 20+ queries (BLAS), "
        "and leaves FAISS's value for fewer; "
        "the `exact, FAISS's BLAS threshold` row repeats the exact batch with the value FAISS ships.",
    ]
    if "cli" in config.sections:
        out.append(_cli_note(config))
    if "serve" in config.sections:
        out.append(_serve_note(config))
    if "filter" in config.sections:
        out.append("Filtered search: the recall section's mixture; a filter keeps a seeded random 1%, 10% or 50% of "
                   "the rows and `VectorIndex.search(query, 10, allowed)` searches them (retrieval/store/"
                   "filtered_search.py: a filter's first query reads only its kept rows, in place from a Flat or "
                   "HNSW-over-flat index, through FAISS's IDSelectorBitmap over every list of an IVF index; its "
                   "second gathers them in half precision (retrieval/store/vectors/kept_rows.py) and from then on the "
                   "half-precision scores propose k + 32 candidates, rescored in float32 and kept only when the "
                   "rounding bound proves nothing left out ranks higher); recall@10 against numpy's exact top 10 of "
                   "the kept rows, the lowest over the runs; p50 over the queries one by one on one thread, the "
                   "median over the runs, each run timing the same index unfiltered beside it; the CPU columns are "
                   "the searching thread's CPU time (time.thread_time), which leaves out waiting for a core.")
    if "store" in config.sections:
        out.append(STORE_NOTE)
    if "scaling" in config.sections:
        out.append("One long file on every core: the decode stage as an index run drives it (`LocalExecutor` over "
                   "N decode worker processes, the file cut into windows by `unit_windows`: its first unit alone, "
                   "then about 3 windows a worker, each decoded from the keyframe before it), fast-protocol frames "
                   "(1 fps, 8 a unit), no model. Workers are started and their imports done before the clock starts. "
                   "Each worker count is timed in a fresh process" + ("" if config.isolate else " (smoke: in-process)")
                   + f", the fastest of {config.repeat} run(s); worker peak RSS is the largest VmHWM of any process "
                   "under the measuring one, sampled every 10 ms.")
    if "rerank" in config.sections or "describe" in config.sections:
        out.append(_lmm_note(config))
    if config.reranker is None:
        out.append("Reranking uses a tiny randomly initialised Qwen2-VL (bench/tiny/vlm.py) on the CPU: it measures "
                   "the pipeline (decode once, model call, score cache), not a real LMM's cost, which is seconds "
                   "to minutes per pair on a CPU.")
    return out


STORE_NOTE = (
    "FAISS and Lance: the recall section's mixture, written 100k rows at a time; N rows built to disk (FAISS: "
    "`VectorIndex.build` with its automatic factory, saved; Lance: `LanceVectors.append` a version per 100k rows, "
    "then `maybe_reindex`), then 100k more (half of N when smaller): FAISS rebuilds from every row, saves and a "
    "reader loads it; Lance appends one version and a newly opened reader counts it, before `maybe_reindex` adds "
    "the rows to the index (or retrains it past 25% growth: 'full rebuild'). Queries: held-out draws from the "
    "mixture, asked one at a time after the append by a fresh process that opens the store (`python -m "
    "bench.perf.store_serve`; its VmHWM is the serving RSS); recall@10 against an exact search of every row.")


def _cli_note(config: PerfConfig) -> str:
    runs = "once (smoke: the --help commands only)" if config.smoke else f"{max(5, config.repeat)} times"
    return ("Command-line start-up: each command is `python cli.py ...` (the `convis` entry point) in a fresh "
            f"process, timed from start to exit {runs}, with HF_HUB_OFFLINE=1 unless the caller set it; the median "
            "wall seconds, the median CPU seconds, the median and the largest max RSS (the process's own ru_maxrss, "
            "from wait4) are shown, and the median wall over that of `convis query --anchor box.mp4 --concept "
            "main-action`, whose anchor is indexed (it reads the catalog, hashes the file and searches FAISS; no "
            "model is built). The commands run on the demo index, out/demo-index (`convis index examples/videos "
            "--captions examples/captions`, built when absent, else brought up to date first). The windowed query "
            "runs on a fresh copy of the index: its first run, then the median of the runs after it. `convis diff` "
            "looks for its LMM in an empty Hugging Face cache, offline, and is timed to its refusal. `convis serve`: "
            "a fresh server each run, timed from its start until /health answers, then, once /health lists nothing "
            "as warming, one GET /search; CPU seconds and RSS are the server's own (/proc) at that moment.")


def _serve_note(config: PerfConfig) -> str:
    return ("The server under load: `convis serve` over a fresh index of hard links to examples/videos (with "
            "examples/captions), warm before anything is timed. Alone: each route asked "
            f"{ALONE_RUNS + 1} times one after another on one connection, the first untimed. Load: "
            f"{config.serve_threads} client threads in this process, each asking {config.serve_requests} times on "
            "a connection of its own, /query (box.mp4, main-action), /search (a hand holding a cup), /videos and "
            "/health in turn (client i starting at route i), while `convis index` runs one after another each add "
            f"{WRITER_BATCH} hard links under new names (decoded and embedded as new files). Percentiles are "
            "nearest-rank; errors count answers other than 200 and 503 and requests without an answer; in flight "
            "is a route's requests outstanding on average (the seconds its clients waited over the load's wall "
            "seconds).")


def _lmm_note(config: PerfConfig) -> str:
    shape = ("random checkpoints in the real models' dimensions (bench/perf/real_shape.py: Qwen2.5-VL 7B, "
             "LLaVA-OneVision 7B, InternVL3 8B), bf16, built on the GPU" if config.shape == "7b" else
             "the tiny random checkpoints of bench/tiny/vlm.py (their speed says nothing of a real model's; their "
             "call counts do)")
    return ("Each LMM family: " + shape + ". Reranking: the first clip against the others, the anchor the same "
            "frames object in every pair, concept by concept, after one untimed warm-up; pairs/s is pairs over the "
            "timed run's wall seconds, at batch 1 and the family's default batch, with prompt sharing on and off "
            "where the reranker takes `share`; vision calls, prefix passes and pair passes are the reranker's "
            "`work` counts over the timed run (n/a: it keeps none). Describing: every unit asked the caption and "
            "the five concept requests, at most 128 new tokens each (8 in smoke runs), one request a generation "
            "(`describe_many`) and every question of the batch in one (`describe_each`); new tokens are those "
            "generate wrote before each row's end. GPU peak is torch.cuda.max_memory_allocated over the timed run; "
            "GPU busy in kernels is the CUDA kernel time torch.profiler records over a second, profiled run's wall "
            "time (n/a on a CPU).")
