"""rag_core: the knowledge-base workbench's engine, importable without Streamlit."""

__version__ = "0.1.0"
