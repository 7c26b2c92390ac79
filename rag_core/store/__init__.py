"""The store: the ChunkStore port (rag_core.ports) on Milvus, Milvus Lite embedded or a server by URI.

Three rooms: milvus/ (MilvusStore and the parts it is composed of), lite/ (Milvus Lite's processes and
files: the connection, our lock, the store host), originals/ (the kept originals). memory.py is the
in-memory ChunkStore that passes the same contract. The names other packages use are these."""

from .lite.connection import LiteOptions, is_lite
from .milvus.schema import CHUNK_FIELDS
from .milvus.store import MilvusStore, WriteResult

__all__ = ["CHUNK_FIELDS", "LiteOptions", "MilvusStore", "WriteResult", "is_lite"]
