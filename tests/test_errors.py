"""What a client of the API is told of a failure (errors.for_client): the reason, without the addresses of the
services behind the workbench or the CLI's commands."""

from rag_core.errors import for_client


def test_the_reason_stays_and_addresses_and_cli_advice_go() -> None:
    said = ("There is no knowledge base 'nope'; the knowledge bases are biz (`python -m rag_core kb list`; make one "
            "with `python -m rag_core kb create nope`).")
    assert for_client(said) == "There is no knowledge base 'nope'; the knowledge bases are biz."
    said = "The chat model at http://10.0.0.7:8000/v1 answered HTTP 500 (boom). Check chat.base-url."
    assert for_client(said) == "The chat model answered HTTP 500 (boom). Check chat.base-url."
    said = "No document 'x.md' in the knowledge base (`docs` lists them). Run `python -m rag_core ingest x.md`."
    assert for_client(said) == "No document 'x.md' in the knowledge base."
    assert for_client("return-n (9) cannot be larger than retrieve-k (5).") == (
        "return-n (9) cannot be larger than retrieve-k (5).")
    assert for_client("Run `python -m rag_core migrate`.") == "The request failed; the details are in the server's log."


def test_clauses_and_trailing_commands_go_and_the_sentence_stays() -> None:
    said = ("The embedder of knowledge base 'b' cannot change while this process has it open; stop the service and "
            "run `python -m rag_core kb set b ...`.")
    assert for_client(said) == "The embedder of knowledge base 'b' cannot change while this process has it open."
    said = "It holds 3 documents. Copy it with the new embedder instead: `python -m rag_core kb copy b NEW`."
    assert for_client(said) == "It holds 3 documents. Copy it with the new embedder instead."
