"""Attribute names: OpenInference's semantic conventions (what Arize Phoenix, Langfuse and other LLM trace
viewers read), from the `openinference-semantic-conventions` package, plus the workbench's own (`rag.*`)."""

from __future__ import annotations

from openinference.semconv.trace import (
    DocumentAttributes,
    MessageAttributes,
    OpenInferenceSpanKindValues,
    SpanAttributes,
    ToolCallAttributes,
)

SPAN_KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
AGENT = OpenInferenceSpanKindValues.AGENT.value
CHAIN = OpenInferenceSpanKindValues.CHAIN.value
LLM = OpenInferenceSpanKindValues.LLM.value
TOOL = OpenInferenceSpanKindValues.TOOL.value
RETRIEVER = OpenInferenceSpanKindValues.RETRIEVER.value
EMBEDDING = OpenInferenceSpanKindValues.EMBEDDING.value
RERANKER = OpenInferenceSpanKindValues.RERANKER.value

INPUT_VALUE = SpanAttributes.INPUT_VALUE
OUTPUT_VALUE = SpanAttributes.OUTPUT_VALUE
SESSION_ID = SpanAttributes.SESSION_ID
LLM_MODEL_NAME = SpanAttributes.LLM_MODEL_NAME
LLM_PROVIDER = SpanAttributes.LLM_PROVIDER
LLM_INVOCATION_PARAMETERS = SpanAttributes.LLM_INVOCATION_PARAMETERS
LLM_TOKEN_COUNT_PROMPT = SpanAttributes.LLM_TOKEN_COUNT_PROMPT
LLM_TOKEN_COUNT_COMPLETION = SpanAttributes.LLM_TOKEN_COUNT_COMPLETION
LLM_TOKEN_COUNT_TOTAL = SpanAttributes.LLM_TOKEN_COUNT_TOTAL
LLM_FINISH_REASON = SpanAttributes.LLM_FINISH_REASON
LLM_INPUT_MESSAGES = SpanAttributes.LLM_INPUT_MESSAGES
LLM_OUTPUT_MESSAGES = SpanAttributes.LLM_OUTPUT_MESSAGES
MESSAGE_ROLE = MessageAttributes.MESSAGE_ROLE
MESSAGE_CONTENT = MessageAttributes.MESSAGE_CONTENT
TOOL_NAME = SpanAttributes.TOOL_NAME
TOOL_PARAMETERS = SpanAttributes.TOOL_PARAMETERS
TOOL_CALL_ID = ToolCallAttributes.TOOL_CALL_ID
TOOL_CALL_FUNCTION_NAME = ToolCallAttributes.TOOL_CALL_FUNCTION_NAME
TOOL_CALL_FUNCTION_ARGUMENTS = ToolCallAttributes.TOOL_CALL_FUNCTION_ARGUMENTS_JSON
MESSAGE_TOOL_CALLS = MessageAttributes.MESSAGE_TOOL_CALLS
EMBEDDING_MODEL_NAME = SpanAttributes.EMBEDDING_MODEL_NAME
RETRIEVAL_DOCUMENTS = SpanAttributes.RETRIEVAL_DOCUMENTS
DOCUMENT_ID = DocumentAttributes.DOCUMENT_ID
DOCUMENT_SCORE = DocumentAttributes.DOCUMENT_SCORE
DOCUMENT_CONTENT = DocumentAttributes.DOCUMENT_CONTENT
DOCUMENT_METADATA = DocumentAttributes.DOCUMENT_METADATA

# The workbench's own
KNOWLEDGE_BASES = "rag.knowledge_bases"
EVIDENCE_KEYS = "rag.evidence_keys"
CITATIONS = "rag.citations"
DROPPED = "rag.dropped"  # rag.dropped.{i}.evidence_key / .reason
STAGE = "rag.stage"
HITS = "rag.hits"
PARAMS = "rag.params"  # JSON of the lookup parameters
MODE = "rag.mode"
REWRITE_OUTCOME = "rag.rewrite.outcome"  # the rewrite stage: rewritten, kept, off, model_failed, model_rejected
REWRITE_BY = "rag.rewrite.by"  # offline, or the model
EXPAND_MODE = "rag.expand.mode"  # the expansion stage: none, neighbours, parent
BLOCKS = "rag.blocks"  # evidence blocks after the expansion (merge) stage
BLOCKS_GROWN = "rag.blocks.grown"  # blocks that hold more than their hits' chunks
BLOCKS_MERGED = "rag.blocks.merged"  # blocks the merge stage joined into others
BLOCK_KEYS = "rag.blocks.keys"  # each block's evidence key, in order (the projection's: each item's)
BLOCK_TOKENS = "rag.blocks.tokens"  # each block's tokens, in the same order
CONTEXT_TOKENS = "rag.context.tokens"  # the projection's tokens
CONTEXT_BUDGET = "rag.context.budget"  # rag.context-tokens
TOKENIZER = "rag.context.tokenizer"  # what counted them (tokens.TOKENIZER)
REWRITE_DETAIL = "rag.rewrite.detail"
ERROR_KIND = "rag.error_kind"


def document(i: int, name: str) -> str:
    """`retrieval.documents.{i}.document.id` and the like."""
    return f"{RETRIEVAL_DOCUMENTS}.{i}.{name}"


def message(which: str, i: int, name: str) -> str:
    """`llm.input_messages.{i}.message.role` and the like (`which`: LLM_INPUT_MESSAGES or LLM_OUTPUT_MESSAGES)."""
    return f"{which}.{i}.{name}"


def tool_call(i: int, j: int, name: str) -> str:
    """`llm.output_messages.{i}.message.tool_calls.{j}.tool_call.function.name` and the like."""
    return f"{LLM_OUTPUT_MESSAGES}.{i}.{MESSAGE_TOOL_CALLS}.{j}.{name}"


def dropped(i: int, name: str) -> str:
    return f"{DROPPED}.{i}.{name}"


# Attributes that hold what people wrote or documents say: left out with tracing.capture-content = false.
CONTENT_KEYS = frozenset({INPUT_VALUE, OUTPUT_VALUE, TOOL_PARAMETERS, REWRITE_DETAIL})  # and a tool call's arguments:
CONTENT_SUFFIXES = (f".{DOCUMENT_CONTENT}", f".{MESSAGE_CONTENT}", f".{TOOL_CALL_FUNCTION_ARGUMENTS}")


def is_content(key: str) -> bool:
    return key in CONTENT_KEYS or key.endswith(CONTENT_SUFFIXES)
