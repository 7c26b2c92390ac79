"""An uploaded file's name exactly as the client sent it.

python-multipart keeps only what follows the last backslash of a file name that starts like `C:\\` or `\\\\`
(a work-around for Internet Explorer 6, which sent the whole path). So `C:\\Windows\\x.md` arrived as `x.md`,
and replaced the document x.md without a word. The part's own Content-Disposition header still has the name
as sent; with it, the doc_id rule (doc_ids) refuses a Windows path in one line, like any other path
that is not inside the knowledge base.
"""

from __future__ import annotations

import re

from starlette.datastructures import UploadFile

# `filename=` as python-multipart reads it: a quoted string (with \\ and \" escapes) or a bare token.
_FILENAME = re.compile(r';\s*filename\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)', re.IGNORECASE)


def upload_name(upload: UploadFile) -> str:
    """The name the client gave `upload`: python-multipart's, unless it cut a Windows path to its last part."""
    name = upload.filename or ""
    header = upload.headers.get("content-disposition", "")
    match = _FILENAME.search(header)
    if match is None or "\\" not in match[1]:
        return name
    value = match[1].strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1].replace("\\\\", "\\").replace('\\"', '"')
    raw = value.encode("latin-1", "replace")  # headers are read as latin-1; the bytes are the client's
    try:
        sent = raw.decode("utf-8")
    except UnicodeDecodeError:
        sent = raw.decode("latin-1")  # as Starlette decodes a name that is not UTF-8
    # Only what python-multipart cut is put back: the name it kept is the end of the one sent.
    return sent if sent != name and sent.endswith("\\" + name) else name
