"""Sources a knowledge base is kept in sync with (issue 38): a folder, a Git repository, a website, a Confluence space,
Notion and Confluence exports. A source's reader lists what is at the source now (`ports.SourceReader`, records in
records.py); the sync compares that with what was indexed from it and adds, replaces, skips and deletes.
"""
