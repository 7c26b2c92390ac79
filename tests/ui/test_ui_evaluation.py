"""Evaluation page (AppTest): a model generator without a chat model says what to do on the page."""

from __future__ import annotations

from tests.ui.apptest_helpers import app_at, texts

PAGE = "pages/evaluation.py"


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
