"""The kept originals: the bytes each version of a document was indexed from, with their sidecars (files),
and the folder of them read as a knowledge base to rebuild from (folder). Nothing is imported here."""
