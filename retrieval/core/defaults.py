"""Defaults that the command line's help shows, in a module that imports nothing.

They belong to the modules that use them (each imports its own from here), but ``convis --help`` must show
them without importing those modules: their imports (models, decoders, the web server) are most of what a
command's start-up costs.
"""

MiB = 1 << 20

INDEX_DIRNAME = ".convis"  # an index's folder, beside the videos it covers
DEFAULT_K = 10  # results a query returns unless asked otherwise (CLI, API and web app alike)

# The shortest --segment: a unit shorter than half a second holds a frame or two at common rates (12 at
# 24 fps, 1 at 1 fps sampling), which no video model can tell apart from its neighbour, while the unit
# count, and the run's time and catalog size with it, grows as the inverse of the length (a 2-hour video
# is 14,400 units at 0.5 s, 7.2 million at 1 ms).
MIN_SEGMENT_SECONDS = 0.5

# Sampled frames one decode task reads at most (every frame spec together; a unit with more is read
# alone): about 35 MB of 224-px frames, so a worker's memory and a task's time stay bounded however long
# the video is.  Each window is held up to three times at once (in the worker, on its way back, being
# embedded): a 2-hour file in 10 s units peaked at 1.9 GB with windows of 256 frames, 1.7 GB with 128.
WINDOW_FRAMES = 128

# A file this long (seconds) is shared by every decode worker: cut into about WINDOWS_PER_WORKER windows a
# worker (at most WINDOW_FRAMES frames each), so that all of them finish it at about the same time. Each
# window costs opening the file again and decoding from the keyframe before it (measured in `convis bench perf
# --sections scaling`); a shorter file is one window a worker, as many files are decoded side by side anyway.
PARALLEL_SECONDS = 120.0
WINDOWS_PER_WORKER = 3

# What one decode worker may hold: a window of frames (about 35 MB), its copy on the way back, the
# decoders' buffers and the interpreter with PyAV and decord imported (about 150 MB).
WORKER_MEMORY_MB = 512

MAX_UPLOAD_BYTES = 512 * MiB  # an anchor clip, not a film archive
UPLOAD_QUOTA_BYTES = 2048 * MiB  # what uploads may hold on disk together; the oldest go first

# The LMM `convis diff` asks when none is named: the ConViS-Bench family whose chat takes the pair as one video
# with its own frame budget (a GPU and the hub, or its weights in the Hugging Face cache, are needed).
DEFAULT_DIFF_MODEL = "qwen2.5-vl"
# A diff statement whose P(a) is this close to 0.5 is shown as "can't tell": the model barely leans either way.
# VidDiff's predictions (--json "predictions", the benchmark) still take the larger side, as VidDiff scores them.
CANT_TELL_MARGIN = 0.1
CANT_TELL = "can't tell"

# Ranges of the numbers a user types that stand for something physical, checked before any model loads.
MAX_K = 1000  # results one query or search returns at most (the server's query answers as many)
# The longest unit (--segment, --shot-max, --shot-min) in seconds: a day is longer than any video convis indexes
# as units ('off' is one unit per file); shot units stay at least MIN_SEGMENT_SECONDS long, as fixed ones do
# (a --shot-max of 0.01 s cut the 9 example clips into 5,000 units and ran 5 minutes at 2.5 GB).
MAX_SEGMENT_SECONDS = 86_400.0
# The highest --fps a diff samples at: no camera most users own records faster, and a rate above a file's own
# takes every frame anyway (at most 75 a clip).
MAX_SAMPLE_FPS = 120.0
# Concept weights are relative: past a ratio of a million one concept counts for nothing beside another.
MIN_CONCEPT_WEIGHT, MAX_CONCEPT_WEIGHT = 0.001, 1000.0
