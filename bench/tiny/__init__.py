"""Tiny, randomly initialised checkpoints built from configs offline in under a second.

They run convis's real loading, preprocessing and forward paths where no real weights can be had
(the test suite, ``convis bench perf --smoke``); they measure code paths, never model quality.
"""
