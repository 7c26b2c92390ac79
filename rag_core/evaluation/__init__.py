"""Retrieval evaluation: labelled sets, metrics, runs and sweeps through the one lookup path.

    from rag_core.bootstrap import factories
    from rag_core.config import load_settings
    from rag_core.evaluation import Grid, load_set, run_evaluation, save_run

    settings = load_settings()
    eval_set = load_set("cmrc2018", sample=50, seed=0)
    run = run_evaluation(eval_set, Grid.from_settings(settings, retrieve_k=[20, 50], mode=["dense", "bm25"]),
                         settings, factories=factories(), progress=print)
    save_run(run, "data/eval/runs/my-run")
"""

from .datasets import (
    Answer,
    EvalQuery,
    EvalSet,
    Span,
    bundled_sets,
    choose_queries,
    load_beir,
    load_folder_corpus,
    load_user_set,
    parse_user_set,
    read_query_file,
)
from .indexing import bulk_index, collection_name, eval_db_path
from .metrics import (
    answer_found,
    chunk_contains,
    chunk_overlaps_span,
    document_ranking,
    mrr_at_k,
    ndcg_at_k,
    recall_at_k,
    span_recall_at_k,
)
from .params import PARAM_KEYS, PARAM_SETTINGS, parse_values
from .results import list_runs, load_run, runs_dir, save_run
from .runner import EvalProgress, EvalRun, Grid, PointResult, SweepPoint, run_evaluation
from .testsets import load_set

__all__ = [
    "PARAM_KEYS", "PARAM_SETTINGS", "Answer", "EvalProgress", "EvalQuery", "EvalRun", "EvalSet", "Grid",
    "PointResult", "Span", "SweepPoint", "answer_found", "bulk_index", "bundled_sets", "choose_queries",
    "chunk_contains", "chunk_overlaps_span", "collection_name", "document_ranking", "eval_db_path", "list_runs",
    "load_beir", "load_folder_corpus", "load_run", "load_set", "load_user_set", "mrr_at_k", "ndcg_at_k",
    "parse_user_set", "parse_values", "read_query_file", "recall_at_k", "run_evaluation", "runs_dir", "save_run",
    "span_recall_at_k",
]
