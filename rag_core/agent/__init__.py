"""The chat agent: a tool-calling loop over an OpenAI-compatible chat model (DashScope by default),
streaming typed events; an extractive offline mode when no model is configured. No Streamlit here.

    agent = build_agent(workbench)          # rag_core.bootstrap
    session = Session()
    for event in agent.run("CPU 使用率高怎么处理？", session):
        ...  # ToolCallEvent, ToolResultEvent, ContentEvent, NoticeEvent, then DoneEvent or ErrorEvent
"""

from .citations import check_citations, extract_citations
from .clock import clock_tool
from .events import ContentEvent, DoneEvent, ErrorEvent, Event, NoticeEvent, ToolCallEvent, ToolResultEvent
from .kb_tool import knowledge_base_tool
from .loop import Agent
from .model import (DASHSCOPE_BASE_URL, DASHSCOPE_DEFAULT_MODEL, AssistantReply, ChatModel, ChatModelConfig,
                    ChatModelError, StreamAccumulator, ToolCallRequest)
from .loki import LogQuery, LogResult, LokiClient, logs_tool
from .prometheus import Alert, PrometheusClient, prometheus_alerts_tool
from .prompt import SYSTEM_PROMPT
from .session import Session, Turn
from .tools import Tool, Toolbox, ToolOutput

__all__ = ["Agent", "Alert", "AssistantReply", "ChatModel", "ChatModelConfig", "ChatModelError", "ContentEvent",
           "DASHSCOPE_BASE_URL", "DASHSCOPE_DEFAULT_MODEL", "DoneEvent", "ErrorEvent", "Event", "NoticeEvent",
           "SYSTEM_PROMPT", "Session", "StreamAccumulator", "Tool", "ToolCallEvent", "ToolCallRequest", "ToolOutput",
           "ToolResultEvent", "Toolbox", "Turn", "check_citations", "clock_tool", "extract_citations",
           "knowledge_base_tool", "LogQuery", "LogResult", "LokiClient", "logs_tool", "PrometheusClient",
           "prometheus_alerts_tool"]
