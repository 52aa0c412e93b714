"""What the user reads, one module per verb group: ``results`` (query, search), ``comparison`` (compare, diff),
``index_report`` (index, describe), ``listing`` (info, ls, repair, remove), ``models``, ``dupes``, ``pages`` (the
HTML pages) and ``common`` (JSON, notes, the notices every result carries).

Each reads the shapes it prints from the public face (``retrieval.api``) or from the result values themselves.
What only a page or a table of models needs is imported when it is drawn, so that `convis --help` stays light.
"""
