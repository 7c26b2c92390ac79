"""Evaluation page (AppTest): the parameters show the values that will run (the knowledge base's own, or the fusion
measured for the embedder of a corpus indexed here), and a model generator without a chat model says what to do on
the page."""

from __future__ import annotations

from tests.ui.apptest_helpers import app_at, texts
from ui.state import knowledge_bases

PAGE = "pages/evaluation.py"


def _fusion(at) -> tuple[list[str], str, str]:
    return (at.multiselect(key="eval_fusion").value, at.text_input(key="eval_dense_weight").value,
            at.text_input(key="eval_bm25_weight").value)


def test_the_parameters_show_the_fusion_each_knowledge_base_runs(fresh_kb) -> None:
    """The page showed fusion weighted, dense 0.5 (the built-in default) while the knowledge base runs dbsf (the
    fusion measured for its embedder): a field left as shown runs the knowledge base's own, so it must show it."""
    kb = fresh_kb.settings.kb_name
    assert fresh_kb.settings["rag.fusion"] == "dbsf"  # made with the local embedder: its measured fusion
    knowledge_bases().create("wide", {"rag.fusion": "weighted", "rag.dense-weight": 0.7})
    at = app_at(PAGE)
    # the sample set indexed here with the local embedder: the fusion measured for it, as `eval` runs it
    assert _fusion(at) == (["dbsf"], "0.5", "1.0")
    assert "Shown: the fusion measured for local." in texts(at, "caption")

    at.radio(key="eval_target").set_value("Knowledge bases (as they are)").run()
    assert not at.exception, at.exception
    assert at.multiselect(key="eval_kbs").value == [kb]
    assert _fusion(at) == (["dbsf"], "0.5", "1.0")
    assert f"Shown: the settings of knowledge base {kb}." in texts(at, "caption")

    at.multiselect(key="eval_kbs").set_value(["wide"]).run()
    assert not at.exception, at.exception
    assert _fusion(at) == (["weighted"], "0.7", "1.0")  # follows the knowledge base chosen

    at.text_input(key="eval_dense_weight").set_value("0.3,0.7").run()
    at.multiselect(key="eval_kbs").set_value([kb, "wide"]).run()
    assert not at.exception, at.exception
    assert _fusion(at) == (["dbsf"], "0.3,0.7", "1.0")  # a field the person changed keeps their values
    assert "A field left as shown runs each knowledge base with its own value: wide: fusion weighted" in texts(
        at, "caption")


def test_a_model_generator_without_a_chat_model_says_what_to_do_on_the_page(kb) -> None:
    """The error used to say `--generator offline` (a flag of the command line): the page's sentence names its own
    choice, the command's message follows in the expander."""
    at = app_at(PAGE)
    at.radio(key="eval_gen_generator").set_value("model").run()
    at.button(key="eval_gen_run").click().run()
    assert not at.exception, at.exception
    error = texts(at, "error")
    assert "needs a chat model" in error and "choose the offline generator" in error
    assert "--generator" not in error
    (expander,) = [e for e in at.expander if "Original message" in e.label]
    assert "--generator offline" in texts(expander, "code")
