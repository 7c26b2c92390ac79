"""Text that is not UTF-8: GB18030/GBK, Big5, EUC-KR, Windows-1252 and, last, charset-normalizer.

charset-normalizer alone is unreliable on short Chinese text (it calls GBK "big5") and on Western
single-byte text, so GB18030 and Big5 are tried strictly here and judged by how many of the decoded
characters are common Chinese characters. See `decode_legacy` for the full rule.
"""

from __future__ import annotations

import codecs
import functools
import re
import unicodedata

from ..errors import LoaderError

SAMPLE = 65536
_MB = 1024 * 1024
# C0 controls other than \t \n \v \f \r and ESC, DEL, and C1 controls, which no real text contains.
TEXT_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f-\x9f]")


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def decode_legacy(data: bytes, name: str, utf8_error: UnicodeDecodeError) -> tuple[str, str]:
    """Decode bytes that are not UTF-8. The rule, in order:

    1. Almost UTF-8 (many valid multi-byte sequences, a few broken ones): refuse and say where, rather
       than decode the whole file as something else and index mojibake.
    2. Korean (EUC-KR/CP949): GB2312 and EUC-KR share byte ranges, so common Chinese characters
       read as EUC-KR are valid Hangul too. Korean wins only with >= 8 Hangul syllables making up
       >= 80% of the non-ASCII characters, >= 20% of them particles or endings. Shorter Korean text
       (a title) is indistinguishable from Chinese and reads as Chinese: this is a Chinese-first tool.
    3. Chinese: GB18030 (superset of GBK and GB2312) and Big5 (CP950 as fallback), each decoded
       strictly and scored by `_chinese_score`; the best wins when it scores >= 0.6, GB18030 on a tie.
       Measured on sentences from examples/: right for every GBK and Big5 sample of 4+ characters;
       1-2 character Big5 strings that are also common GB characters read as GB18030.
    4. Western (Windows-1252), judged by `_western_plausible`: charset-normalizer guesses cp1250,
       cp775 or mac_latin2 for plain French, so this comes before it.
    5. charset-normalizer for anything else (Cyrillic, Japanese, Greek, ...), given at least 32
       non-ASCII bytes: on less it calls almost any bytes some Cyrillic code page.
    """
    bad_at = utf8_error.start
    broken, valid_multibyte = _utf8_damage(data)
    if valid_multibyte >= 20 and broken * 50 <= valid_multibyte:
        raise LoaderError(
            f"{name}: the file is UTF-8 except for {broken} invalid byte sequence{'s' if broken > 1 else ''}, "
            f"the first at line {_line_of(data, bad_at)} (byte {bad_at}); fix those characters or re-save "
            "the file as UTF-8", code="undecodable"
        )

    korean = _strict(data, "euc-kr") or _strict(data, "cp949")
    if korean is not None:
        text, codec = korean
        non_ascii = [c for c in text[:SAMPLE] if ord(c) >= 0x80]
        hangul = [c for c in non_ascii if "\uac00" <= c <= "\ud7a3"]
        particles = sum(1 for c in hangul if c in _KOREAN_PARTICLES)
        if len(hangul) >= 8 and len(hangul) >= 0.8 * len(non_ascii) and particles >= 0.2 * len(hangul):
            return text, codec

    chinese: list[tuple[float, str, str]] = []
    for codecs_to_try in (("gb18030",), ("big5", "cp950")):
        for codec in codecs_to_try:
            decoded = _strict(data, codec)
            if decoded is not None:
                chinese.append((_chinese_score(decoded[0]), decoded[0], codec))
                break
    if chinese:
        score, text, codec = max(chinese, key=lambda c: c[0])  # max keeps the first (GB18030) on a tie
        if score >= 0.6:
            return text, codec

    western = _strict(data, "cp1252")
    if western is not None and _western_plausible(western[0]):
        return western

    if sum(1 for b in data[:SAMPLE] if b >= 0x80) >= 32:
        # Below that charset-normalizer will call almost any bytes some Cyrillic code page.
        guess = _charset_normalizer(data)
        if guess is not None:
            return guess

    raise LoaderError(
        f"{name}: the text is not UTF-8 (first invalid byte at line {_line_of(data, bad_at)}) and its "
        "encoding could not be recognised (tried GB18030/GBK, Big5, Windows-1252 and automatic "
        "detection); re-save the file as UTF-8", code="undecodable"
    )


# Korean particles and verb endings (이 가 는 을 를 의 에 로 ... 다 니 습): 23-45% of the syllables
# of real Korean sentences, under 15% of Chinese read as EUC-KR (0 from 20 characters on).
_KOREAN_PARTICLES = frozenset("이다는의에을를하고가지로한서기도니습있으은어게해들")


def _strict(data: bytes, codec: str) -> tuple[str, str] | None:
    try:
        return data.decode(codec), codec
    except UnicodeDecodeError:
        return None


def _utf8_damage(data: bytes) -> tuple[int, int]:
    """(invalid sequences, valid multi-byte characters) in the first MB, read as UTF-8."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text = decoder.decode(data[:_MB], final=len(data) <= _MB)
    broken = text.count("\ufffd")
    valid = len(re.findall(r"[^\x00-\x7f\ufffd]", text))
    return broken, valid


@functools.cache
def _common_hanzi() -> frozenset[str]:
    """GB2312 level 1 (3755 most used simplified) plus Big5 level 1 (5401 most used traditional)."""
    chars: set[str] = set()
    for lead in range(0xB0, 0xD8):
        for trail in range(0xA1, 0xFF):
            try:
                chars.add(bytes((lead, trail)).decode("gb2312"))
            except UnicodeDecodeError:
                pass
    for lead in range(0xA4, 0xC7):
        for trail in (*range(0x40, 0x7F), *range(0xA1, 0xFF)):
            if lead == 0xC6 and trail > 0x7E:  # level 1 ends at C67E
                break
            try:
                chars.add(bytes((lead, trail)).decode("big5"))
            except UnicodeDecodeError:
                pass
    return frozenset(chars)


def _is_cjk_punctuation(o: int) -> bool:
    return (
        0x3000 <= o <= 0x303F  # 、。「」《》【】
        or 0xFF00 <= o <= 0xFFEF  # full-width forms ：，（）
        or 0x2000 <= o <= 0x206F  # — … “ ” ‘ ’
        or 0x20A0 <= o <= 0x20CF  # €
        or 0x2100 <= o <= 0x22FF  # ℃ → ≤ ×
        or 0x2460 <= o <= 0x24FF  # ①
        or o in (0xB0, 0xB7, 0xD7, 0xF7)  # ° · × ÷
    )


def _chinese_score(text: str) -> float:
    """How much `text` looks like correctly decoded Chinese, from -3 to 1, over non-ASCII characters.

    +1 for a common hanzi or CJK/typographic punctuation, 0 for other characters (rare hanzi, Greek,
    box drawing), -3 for what a wrong guess produces: private-use and unassigned code points, U+FFFD,
    C1 controls, and kana (Big5 read as GB18030 turns the most common characters into kana).
    """
    common = _common_hanzi()
    good = bad = total = 0
    for ch in text[: 4 * SAMPLE]:
        o = ord(ch)
        if o < 0x80:
            continue
        total += 1
        if ch in common or _is_cjk_punctuation(o):
            good += 1
        elif (
            0xE000 <= o <= 0xF8FF
            or o >= 0xF0000
            or o == 0xFFFD
            or 0x80 <= o <= 0x9F
            or 0x3040 <= o <= 0x30FF
            or unicodedata.category(ch) == "Cn"
        ):
            bad += 1
    return (good - 3 * bad) / total if total else 0.0


_WESTERN_LETTERS = frozenset(
    "ÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖØÙÚÛÜÝÞßàáâãäåæçèéêëìíîïðñòóôõöøùúûüýþÿŒœŠšŽžŸ"
)
_WESTERN_SYMBOLS = frozenset("‘’‚“”„–—…•€£¥¢©®™°±²³¹½¼¾«»‹›¿¡§¶·×÷\u00a0")


def _western_plausible(text: str) -> bool:
    """True when every non-ASCII character is a Western letter or symbol and most accented letters
    sit next to an ASCII letter ("café", "Größe"). Chinese or Cyrillic read as Windows-1252 gives
    runs of accented letters and symbols instead."""
    sample = text[: 4 * SAMPLE]
    letters = attached = 0
    for i, ch in enumerate(sample):
        if ord(ch) < 0x80:
            continue
        if ch in _WESTERN_SYMBOLS:
            continue
        if ch not in _WESTERN_LETTERS:
            return False
        letters += 1
        before = sample[i - 1] if i else ""
        after = sample[i + 1] if i + 1 < len(sample) else ""
        if (before.isascii() and before.isalpha()) or (after.isascii() and after.isalpha()):
            attached += 1
    return letters == 0 or attached >= 0.7 * letters


def _charset_normalizer(data: bytes) -> tuple[str, str] | None:
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is None:
        return None
    codec = best.encoding.replace("_", "-")
    # UTF-16/32 (only with a BOM), Chinese and Korean were judged already with better rules; the
    # same families guessed here are mojibake.
    if codec.startswith(("utf", "gb", "big5", "cp950", "hz", "euc-kr", "cp949", "johab", "iso2022-kr")):
        return None
    text = str(best)
    if "\ufffd" in text or TEXT_CONTROL.search(text[:SAMPLE]):
        return None
    return text, codec
