"""convis command line: index a folder of videos, query it by concept, compare pairs, run benchmarks.

``python cli.py ...`` and the installed ``convis ...`` are the same app: ``retrieval.cli.app``.
"""

from retrieval.cli.app import main

if __name__ == "__main__":
    main()
