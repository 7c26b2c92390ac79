"""Embedding adapters, one per module, and their registry (`providers.EMBEDDERS`: the choices of
`embedding.provider` and the factory of each); only `rag_core.bootstrap` builds them. The port is
`rag_core.ports.Embedder`.

This package's `__init__` imports nothing: `config` reads the registry, and importing the port here would make
every setting depend on it (and on what the port imports)."""
