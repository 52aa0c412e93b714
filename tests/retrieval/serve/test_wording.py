"""The server's words: request fields by their names, and what a web user cannot pass said as what it is."""

from retrieval.serve.wording import http_words


def test_notes_and_errors_name_request_fields_not_cli_flags():
    assert http_words("--where width: unknown field") == "where width: unknown field"
    assert http_words("--mode hybrid and --concept do not go together") == \
        "mode hybrid and concept do not go together"


def test_a_note_names_what_a_web_user_can_do_instead_of_a_flag():
    note = http_words("location and main-objects are both scored by efficientnet-lite0; rerank with an LMM "
                      "(--reranker), or give one of them another signal (--signal main-objects=clip)")
    assert "(--" not in note
    assert "(Rerank, with a server started with a reranker)" in note
    assert "(from the command line: convis query --signal main-objects=clip)" in note
    assert http_words("start it with convis serve --reranker NAME") == "start it with convis serve --reranker NAME"
