"""The chat agent: a tool-calling loop over a chat model (the `ChatModel` port; rag_core.clients.openai_chat
speaks to DashScope by default), streaming typed events; an extractive offline mode when no model is
configured. No Streamlit here.

    agent = build_agent(workbench)          # rag_core.bootstrap
    session = Session()
    for event in agent.run("CPU 使用率高怎么处理？", session):
        ...  # ToolCallEvent, ToolResultEvent, ContentEvent, NoticeEvent, then DoneEvent or ErrorEvent
"""

from ..citations import check_citations, extract_citations
from .alerts_tool import prometheus_alerts_tool
from .clock import clock_tool
from .events import ContentEvent, DoneEvent, ErrorEvent, Event, NoticeEvent, ToolCallEvent, ToolResultEvent
from .kb_tool import knowledge_base_tool
from .logs_tool import logs_tool
from .loop import Agent
from .prompt import SYSTEM_PROMPT
from .session import Session, Turn
from .tools import Tool, Toolbox, ToolOutput

__all__ = ["Agent", "ContentEvent", "DoneEvent", "ErrorEvent", "Event", "NoticeEvent", "SYSTEM_PROMPT", "Session",
           "Tool", "ToolCallEvent", "ToolOutput", "ToolResultEvent", "Toolbox", "Turn", "check_citations",
           "clock_tool", "extract_citations", "knowledge_base_tool", "logs_tool", "prometheus_alerts_tool"]
