"""The app's language (English or Simplified Chinese) and the translation of every user-visible string.

Strings are written in English in `app.py`, `pages/` and `ui/` and go through `t()` (or `tn()` for a count):

    st.button(t("Search"))
    st.caption(t("{n} chunks in {doc}", n=len(chunks), doc=doc_id))

The catalogs are gettext files, one per language, that translators know: `locale/<lang>/LC_MESSAGES/messages.po`,
read with Babel (no compile step). English is the source language: its msgids are the English text, so its
catalog only holds overrides. `make messages` extracts every `t(...)` / `tn(...)` / `N_(...)` string into
`locale/messages.pot` and updates both catalogs; tests/ui/test_i18n.py fails on a string shown without the
catalog, a msgid missing in a language, and placeholders that differ between a msgid and its translation.
Terms follow locale/GLOSSARY.md.

Placeholders are `str.format` fields (`{n}`, `{doc}`): a message with parameters writes a literal brace as `{{`.
Codes that come from rag_core (drop reasons, statuses, error codes) are translated here, at the edge; the CLI's
`--json` and the API keep the codes.

The language: the sidebar's switcher (`language_switcher`, drawn by app.py on every page), bound to `?lang=zh` /
`?lang=en` in the URL so links carry it; by default the browser's language (`st.context.locale`).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import streamlit as st

LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
DOMAIN = "messages"
LANGS = {"en": "English", "zh": "中文"}
SOURCE = "en"  # the language the code's strings are written in
LANG_PARAM = "lang"  # session state, bound to the URL (`?lang=zh`) by the switcher


def N_(message: str) -> str:  # noqa: N802 - gettext's name for "mark for extraction, translate later"
    """Marks a string for the catalog where it is defined (a constant); `t(value)` translates it where shown."""
    return message


@functools.cache
def catalog(lang: str) -> dict[str | tuple[str, str], str | tuple[str, ...]]:
    """The translations of `lang`: msgid (or (singular, plural)) -> msgstr, untranslated and fuzzy ones left out."""
    from babel.messages.pofile import read_po

    path = LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po"
    with path.open("rb") as f:
        po = read_po(f, locale=lang)
    out: dict[str | tuple[str, str], str | tuple[str, ...]] = {}
    for message in po:
        if not message.id or message.fuzzy:
            continue
        if isinstance(message.id, tuple | list):
            strings = tuple(message.string or ())  # babel types a message's string as either form, or None
            if strings and all(strings):
                out[(message.id[0], message.id[1])] = strings
        elif message.string and isinstance(message.string, str):
            out[message.id] = message.string
    return out


def browser_language() -> str:
    """The browser's language when it is one of ours ("zh-CN", "zh-TW" -> "zh"), else the source language."""
    try:
        locale = st.context.locale or ""
    except Exception:  # noqa: BLE001 - no browser (bare mode, AppTest without a context)
        locale = ""
    code = locale.split("-")[0].split("_")[0].lower()
    return code if code in LANGS else SOURCE


def language() -> str:
    """The language of this session: chosen in the switcher or the URL, else the browser's."""
    chosen = st.session_state.get(LANG_PARAM) or st.query_params.get(LANG_PARAM)
    return chosen if chosen in LANGS else browser_language()


def t(message: str, /, **params: Any) -> str:
    """`message` in this session's language, its `{placeholders}` filled from `params`."""
    text = message
    if (lang := language()) != SOURCE:
        found = catalog(lang).get(message)
        text = found if isinstance(found, str) else message
    return text.format(**params) if params else text


def tn(singular: str, plural: str, n: int, /, **params: Any) -> str:
    """The singular or plural form for count `n` (Chinese has one form), `{n}` and `params` filled in."""
    lang = language()
    forms = catalog(lang).get((singular, plural)) if lang != SOURCE else None
    if isinstance(forms, tuple):
        text = forms[0] if len(forms) == 1 else forms[0 if n == 1 else 1]
    else:
        text = singular if n == 1 else plural
    return text.format(n=n, **params)


def language_switcher() -> str:
    """The sidebar's language selector (two buttons, `en` and `zh`); returns the language of this run.

    Its options are shown as the codes: a widget bound to the URL writes (and accepts) its options as shown, so a
    `format_func` showing "中文" would make the URL `?lang=中文` and refuse `?lang=zh`. Its default is the browser's
    language, not the current one: a bound widget leaves its default out of the URL, so a choice that differs from
    the browser's stays in the URL (and in every link), and one equal to it needs no parameter in this browser."""
    st.segmented_control(t("Language / 语言"), list(LANGS), default=browser_language(), required=True, key=LANG_PARAM,
                         bind="query-params", help=" · ".join(f"`{code}` {name}" for code, name in LANGS.items()))
    return language()
