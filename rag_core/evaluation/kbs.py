"""Opening the knowledge bases an evaluation runs against (`eval --kb a,b`, `eval --live`).

Every name is checked against the catalog before anything is opened, and all unknown names are reported
in one line; then each knowledge base is opened with its own settings (those with the same embedder share
the loaded model) and closed afterwards."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ..config import Settings
from ..errors import EvaluationError
from ..kb.manage import KnowledgeBases
from ..workbench import Factories, Workbench


def check_known(manager: KnowledgeBases, names: Sequence[str]) -> None:
    """Raises EvaluationError naming every name the catalog does not list, and the ones it does."""
    known = manager.names()
    missing = [n for n in names if n not in known]
    if missing:
        listed = ", ".join(known) or "none yet"
        raise EvaluationError(f"No knowledge base named {', '.join(repr(n) for n in missing)}: the knowledge bases "
                              f"are {listed} (`python -m rag_core kb list`; make one with `kb create` or `kb copy`).")


@contextmanager
def opened_knowledge_bases(settings: Settings, names: Sequence[str],
                           factories: Factories) -> Iterator[list[Workbench]]:
    """The workbenches of knowledge bases `names`, in that order, closed on exit (opened with `factories`)."""
    with KnowledgeBases(settings, factories) as manager:
        check_known(manager, names)
        workbenches: list[Workbench] = []
        try:
            for name in names:
                workbenches.append(manager.open(name))
            yield workbenches
        finally:
            for wb in workbenches:
                wb.close()
