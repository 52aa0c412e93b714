"""VidDiff (video action differencing, ICLR 2025): its closed and open metrics, computed as its released code
(jmhb0/viddiff, ``eval_viddiff.py``) does, with a local judge standing in for gpt-4o in open mode."""
