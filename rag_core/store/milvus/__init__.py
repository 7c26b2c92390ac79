"""The Milvus store: MilvusStore (store.py) and the parts it is composed of (schema, registry, writes, search),
with what they share (rows, filters, versions, coalesce, writers). Nothing is imported here, so a module of
this package can be imported without the others."""
