"""Access groups of documents, and the filter that keeps a lookup to those its caller may retrieve.

A document's groups are the values of its `access` labels (a tag `access=sre`, or front matter `access: sre`) and
the groups of every folder rule of its knowledge base (`access.folders`: "runbooks/secret/**=sre; hr/**=hr,legal")
matching its folder. A document with no group is retrieved for everyone; one with groups only for a caller in one
of them (`AccessScope.groups`), or for a caller whose scope is unrestricted.

A subfolder's rule adds groups to its parent's, it never takes them away.

`AccessFilter` is what a store is given (the `access` entry of its filters): the documents this caller may not
retrieve, worked out from the labels file (the source of truth, store.labels) and the rules when the lookup is made,
which Milvus applies with the other filters (`doc_id not in [...]`), so retrieve-k is filled with visible hits.
Why not a filter on the rows' `labels` ("one of mine, or none in use"): it needs a negation, and Milvus Lite 2.5.1
refuses every unary `not` ("unsupported expr proto node", checked here on `not array_contains_any(...)` and even
`not (id == 1)`), while `not in` on a scalar works. So rules are read at lookup time, never written into rows:
changing `access.folders` or a document's `access` tag takes effect at the next lookup without rewriting a row. The
expression grows with the documents hidden from the caller (like the `doc_id in [...]` scopes before labels): on
Milvus Lite 2.5.1, 50,000 rows, a dense top-20 took 2.9 ms unfiltered, 6.5 / 10.5 / 27 ms hiding 100 / 1,000 / 3,000
documents, 7.5 ms with a `labels` filter (docs/retrieval.md). A knowledge base hiding many thousands of documents
from most users would want a positive row label instead (a marker on rows without groups), which needs every row
rewritten.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..scope import KEY_PATTERN, folder_of
from .records import ACCESS_KEY, UNRESTRICTED, AccessScope, Principal, Role

GROUP_PATTERN = KEY_PATTERN  # a group name: letters, digits, _ . - (as a label key), at most 64


@dataclass(frozen=True)
class FolderRule:
    folder: str  # without its slashes: "runbooks/secret"
    groups: frozenset[str]

    def covers(self, doc_id: str) -> bool:
        folder = folder_of(doc_id)
        return folder == self.folder or folder.startswith(self.folder + "/")


@dataclass(frozen=True)
class FolderRules:
    rules: tuple[FolderRule, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.rules)

    def groups_of(self, doc_id: str) -> frozenset[str]:
        """The groups the rules give a document (by its folder)."""
        return frozenset(g for rule in self.rules if rule.covers(doc_id) for g in rule.groups)

    @property
    def text(self) -> str:
        return "; ".join(f"{r.folder}/**={','.join(sorted(r.groups))}" for r in self.rules)


NO_RULES = FolderRules()


def parse_folder_rules(text: str) -> FolderRules:
    """`"runbooks/secret/**=sre; hr/**=hr,legal"` -> FolderRules. A rule is FOLDER/**=GROUP[,GROUP...] (FOLDER= is the
    same: the folder and everything below it), rules separated by `;` or new lines. Raises ConfigError in one line
    naming the bad rule."""
    rules: list[FolderRule] = []
    for item in (part.strip() for part in text.replace("\n", ";").split(";")):
        if not item:
            continue
        folder, sep, groups = item.rpartition("=")
        folder = folder.strip()
        if folder.endswith("**"):
            folder = folder[:-2]
        folder = folder.strip().strip("/")
        names = [g.strip() for g in groups.split(",") if g.strip()]
        if not sep or not folder or not names or "*" in folder or "?" in folder or "[" in folder:
            raise ConfigError(f"access.folders: {item!r} is not FOLDER/**=GROUP[,GROUP] (as runbooks/secret/**=sre; "
                              "a folder is matched with everything below it, no other wildcards).")
        bad = [g for g in names if not GROUP_PATTERN.fullmatch(g)]
        if bad:
            raise ConfigError(f"access.folders: group {bad[0]!r} in {item!r}: use letters, digits, _ . - (starting "
                              "with a letter or _), at most 64.")
        rules.append(FolderRule(folder, frozenset(names)))
    return FolderRules(tuple(rules))


@dataclass(frozen=True)
class AccessFilter:
    """What a store filters rows by for a restricted lookup: the documents the caller may not retrieve (`hidden`,
    doc_ids). Milvus applies it with the other filters as `doc_id not in [...]` (store.milvus.filters.visible); the
    in-memory store checks it the same way (`passes`). Empty: nothing hidden, every row passes."""

    hidden: tuple[str, ...]

    def passes(self, doc_id: str) -> bool:
        return doc_id not in self.hidden


def groups_in_use(labels: Mapping[str, Mapping[str, Sequence[str]]]) -> frozenset[str]:
    """Every group some document's `access` labels name (labels: the knowledge base's, doc_id -> key -> values)."""
    return frozenset(g for doc in labels.values() for g in doc.get(ACCESS_KEY, ()))


def access_filter(scope: AccessScope, labels: Mapping[str, Mapping[str, Sequence[str]]],
                  rules: FolderRules | None = None, doc_ids: Iterable[str] = ()) -> AccessFilter:
    """The filter of a lookup in `scope` over a knowledge base with document `labels` and folder `rules`; `doc_ids`:
    its documents (needed only when there are rules: a document without labels may sit below a ruled folder)."""
    rules = rules or NO_RULES
    candidates = set(labels) | ({d for d in doc_ids if rules.groups_of(d)} if rules else set())
    return AccessFilter(tuple(sorted(d for d in candidates if hides(scope, d, labels, rules))))


def document_groups(doc_id: str, labels: Mapping[str, Mapping[str, Sequence[str]]],
                    rules: FolderRules | None = None) -> frozenset[str]:
    """A document's access groups: its `access` labels' values and those its folder rules give it."""
    return frozenset((labels.get(doc_id) or {}).get(ACCESS_KEY, ())) | (rules or NO_RULES).groups_of(doc_id)


def hides(scope: AccessScope, doc_id: str, labels: Mapping[str, Mapping[str, Sequence[str]]],
          rules: FolderRules | None = None) -> bool:
    """Whether a lookup in `scope` may not retrieve the document (it has groups, none of them the caller's)."""
    if scope.groups is None:
        return False
    groups = document_groups(doc_id, labels, rules)
    return bool(groups) and not groups & scope.groups


def access_labels(labels: Mapping[str, Mapping[str, Sequence[str]]],
                  pending: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, dict[str, tuple[str, ...]]]:
    """The documents' labels as access is decided on them: `labels` (the labels file, the source of truth:
    KeptLabels.all()) with the `access` groups of front matter being written (an ingest's marks: KeptLabels.pending())
    counted already: a document is hidden from the moment its rows may be searched."""
    out = {doc_id: {k: tuple(v) for k, v in own.items()} for doc_id, own in labels.items()}
    for doc_id, marks in pending.items():
        coming = [g for mark in marks for g in (mark.get("front_matter") or {}).get(ACCESS_KEY, ())]
        if coming:
            own = out.setdefault(doc_id, {})
            own[ACCESS_KEY] = tuple(dict.fromkeys([*own.get(ACCESS_KEY, ()), *coming]))
    return out


def sees_all(scope: AccessScope) -> bool:
    """Whether a caller in `scope` sees every document listed, with its groups: an unrestricted scope (the one
    person) or an admin of the knowledge base (`reveal`)."""
    return scope.unrestricted or scope.reveal


def visible_documents(scope: AccessScope, doc_ids: Iterable[str], labels: Mapping[str, Mapping[str, Sequence[str]]],
                      rules: FolderRules | None = None) -> list[str]:
    """`doc_ids` a caller in `scope` sees listed, in their order: those it may retrieve (`hides`), every one when it
    `sees_all`. The one rule of every listing (the knowledge base page, the debugger's choices, GET .../documents,
    the MCP tool list_documents: Workbench.listed_documents), so a document a lookup hides is never named either."""
    if sees_all(scope):
        return list(doc_ids)
    return [d for d in doc_ids if not hides(scope, d, labels, rules)]


def scope_over(principal: Principal, kbs: Sequence[str]) -> AccessScope:
    """The scope of `principal`'s lookups over the knowledge bases `kbs` searched as one (the agent over several):
    their groups, told what was hidden only when they are an admin of every one. One knowledge base:
    `principal.scope(kb)`."""
    if principal.everything:
        return UNRESTRICTED
    return AccessScope(groups=principal.groups, reveal=bool(kbs) and all(principal.can(kb, Role.ADMIN) for kb in kbs))
