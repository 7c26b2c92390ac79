"""The app speaks Chinese and English through one catalog per language (ui/i18n.py, locale/).

- every string the app shows goes through the catalog: an AST scan of app.py, pages/ and ui/ finds labels, titles,
  help texts, messages and chart titles written as bare literals (a line may say `# i18n: ok` for text that is the
  same in every language, e.g. a product name);
- every extracted message is in both catalogs, translated in Chinese, with the same placeholders.
"""

from __future__ import annotations

import ast
import re
import string
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po

from ui import i18n

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted([REPO / "app.py", *(REPO / "pages").glob("*.py"), *(REPO / "ui").glob("*.py")])
KEYWORDS = {"t": None, "tn": (1, 2), "N_": None}

# Streamlit calls whose first argument (and label-like keywords) the user reads.
SHOWN = {"title", "header", "subheader", "caption", "markdown", "write", "text", "info", "warning", "error",
         "success", "exception", "toast", "button", "download_button", "form_submit_button", "link_button",
         "page_link", "checkbox", "toggle", "radio", "selectbox", "multiselect", "select_slider", "slider",
         "number_input", "text_input", "text_area", "date_input", "time_input", "file_uploader", "chat_input",
         "color_picker", "metric", "expander", "popover", "spinner", "progress", "status", "pills",
         "segmented_control", "feedback", "dialog", "Page", "set_page_config", "chat_message"}
SHOWN_KEYWORDS = {"label", "help", "placeholder", "caption", "title", "page_title", "text", "body",
                  "xaxis_title", "yaxis_title", "legend_title", "legend_title_text", "hovertemplate"}
WORD = re.compile(r"[A-Za-z]{2,}")
FIELD = re.compile(r"\{[^{}]*\}")


def _readable(text: str) -> bool:
    """Text with words in it, not counting code spans, placeholders and URLs."""
    text = re.sub(r"`[^`]*`", "", FIELD.sub("", text))
    text = re.sub(r"https?://\S+|:material/\w+:", "", text)
    return bool(WORD.search(text))


def _literal_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    if isinstance(node, ast.List | ast.Tuple):  # st.tabs(["A", "B"]), options lists
        parts = [_literal_text(e) for e in node.elts]
        return " ".join(p for p in parts if p) or None
    return None


def _name(func: ast.AST) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def bare_strings(path: Path) -> list[str]:
    """`line: text` of each shown string that bypasses the catalog in `path`."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    found = []
    tree = ast.parse(source)
    # pybabel does not look inside f-strings: a message written there would never reach the catalog.
    in_fstring = {id(sub) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for sub in ast.walk(node)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _name(node.func)
        literal = bool(node.args) and isinstance(node.args[0], ast.Constant)
        if name in ("t", "tn", "N_") and id(node) in in_fstring and literal:
            found.append(f"{node.lineno}: {name}() inside an f-string is not extracted: call it outside")
            continue
        if name in ("t", "tn", "N_"):
            # A literal is extracted; t(CONSTANT) translates a value marked with N_() where it is defined. Text
            # built at run time (an f-string, a concatenation, str.format) can be in no catalog.
            first = node.args[0] if node.args else None
            built = isinstance(first, ast.JoinedStr | ast.BinOp) or (
                isinstance(first, ast.Call) and _name(first.func) == "format")
            if built or (name == "N_" and not (isinstance(first, ast.Constant) and isinstance(first.value, str))):
                found.append(f"{node.lineno}: {name}() needs a literal string (it is extracted into the catalog)")
            continue
        args: list[ast.AST] = []
        if name in SHOWN or name.endswith("Column") or name == "tabs":
            args += node.args[:1]
        args += [k.value for k in node.keywords if k.arg in SHOWN_KEYWORDS]
        for arg in args:
            text = _literal_text(arg)
            line = lines[arg.lineno - 1] if hasattr(arg, "lineno") else ""
            if text is not None and _readable(text) and "# i18n: ok" not in line:
                found.append(f"{arg.lineno}: {text[:60]!r}")  # type: ignore[attr-defined]
    return found


# Files whose strings are not in the catalog yet (one per line; the translation removes each): must end empty.
NOT_YET = {
}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_shown_string_goes_through_the_catalog(path: Path) -> None:
    if str(path.relative_to(REPO)) in NOT_YET:
        pytest.skip("not translated yet")
    assert bare_strings(path) == [], f"{path.relative_to(REPO)}: wrap these in t() (ui/i18n.py)"


def extracted() -> set[str | tuple[str, str]]:
    out: set[str | tuple[str, str]] = set()
    # the labels of the lookup options (rag_core.retrieval.options), which the debugger's controls show
    for directory, only in ((REPO, {"app.py"}), (REPO / "pages", None), (REPO / "ui", None),
                            (REPO / "rag_core" / "retrieval", {"options.py"})):
        for filename, _, message, *_ in extract_from_dir(str(directory), [("*.py", "python")], keywords=KEYWORDS):
            if (only is None or filename in only) and "/" not in filename:
                out.add(message if isinstance(message, str) else (message[0], message[1]))
    return out


def po(lang: str):
    with (i18n.LOCALE_DIR / lang / "LC_MESSAGES" / f"{i18n.DOMAIN}.po").open("rb") as f:
        return read_po(f, locale=lang)


def _key(message) -> str | tuple[str, str]:
    return message.id if isinstance(message.id, str) else (message.id[0], message.id[1])


@pytest.mark.parametrize("lang", sorted(i18n.LANGS))
def test_each_catalog_holds_exactly_the_messages_of_the_code(lang: str) -> None:
    code = extracted()
    catalog = {_key(m) for m in po(lang) if m.id}
    assert sorted(map(str, code - catalog)) == [], f"missing in locale/{lang}: run `make messages`"
    assert sorted(map(str, catalog - code)) == [], f"no longer in the code, still in locale/{lang}: `make messages`"


def test_every_message_is_translated_into_chinese() -> None:
    untranslated = [str(m.id) for m in po("zh") if m.id and (m.fuzzy or not all(
        [m.string] if isinstance(m.string, str) else m.string))]
    assert untranslated == []


def _fields(text: str) -> list[str]:
    return sorted(name for _, name, _, _ in string.Formatter().parse(text) if name is not None)


@pytest.mark.parametrize("lang", sorted(i18n.LANGS))
def test_translations_keep_the_placeholders(lang: str) -> None:
    wrong = []
    for m in po(lang):
        ids = [m.id] if isinstance(m.id, str) else list(m.id)
        strings = [m.string] if isinstance(m.string, str) else list(m.string)
        expected = sorted(set().union(*(_fields(i) for i in ids)))
        for s in strings:
            if s and sorted(set(_fields(s))) != expected:
                wrong.append(f"{m.id!r} -> {s!r}")
    assert wrong == []


def test_the_scan_finds_bare_strings(tmp_path: Path) -> None:
    page = tmp_path / "page.py"
    page.write_text('import streamlit as st\nfrom ui.i18n import t\nst.title("Debugger")\nst.button(t("Go"))\n'
                    'st.caption(f"{n} chunks")\nst.markdown(f"`{key}`")\nst.tabs(["One", t("Two")])\n'
                    'fig.update_layout(xaxis_title="rank")\nst.selectbox(t("Mode"), modes, help="which")\n'
                    'st.write("Milvus")  # i18n: ok\nt(f"{x} bad")\nt(REASONS[code])\nt("a " + b)\n'
                    'st.write(f"{t(\'in an f-string\')}")\n', encoding="utf-8")
    assert [line.split(":")[0] for line in bare_strings(page)] == ["3", "5", "7", "8", "9", "11", "13", "14"]
