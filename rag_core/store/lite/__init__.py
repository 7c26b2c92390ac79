"""Milvus Lite's process and file management: reaching a `.db` file (connection), our lock on it (lock), its
checks (file), what is relied on inside the pinned Milvus Lite (internals), process identities (processes),
and the store host that shares one file with every workbench process (host, host_client). Nothing is
imported here."""
