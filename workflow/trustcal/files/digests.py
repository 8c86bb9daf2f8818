"""Content digests: a zip archive that carries the digest of its own bytes.

Checkpoints (torch.save) and .npz files (np.savez) are zip archives. The archive's comment, the
last field of its end record, holds "trustcal-blake2b-256:<hex>", the BLAKE2b-256 digest of every
byte before the comment's length field. It is written into the temporary file before the atomic
rename, so a file and its digest can never go out of step, and every zip reader (torch.load,
np.load, zipfile) still reads the file as before. A file written before digests existed (no
comment) is read with one warning per directory that it cannot be verified."""

from __future__ import annotations

import hashlib
import logging
import os
import re
from pathlib import Path

log = logging.getLogger(__name__)


DIGEST_TAG = b"trustcal-blake2b-256:"
_DIGEST_COMMENT_LEN = len(DIGEST_TAG) + 64  # the tag and 32 bytes in hex
_END_RECORD = b"PK\x05\x06"  # signature of the zip end record: 22 bytes, the last 2 the comment's length
_CHUNK = 1 << 20
_unverified_dirs: set[Path] = set()


class DigestMismatch(ValueError):
    """A file's bytes do not match the content digest it carries, or its end record is damaged;
    the message says which, in words that follow the file's name."""


def _digest_of(fh, n_bytes: int) -> str:
    h = hashlib.blake2b(digest_size=32)
    fh.seek(0)
    while n_bytes > 0:
        chunk = fh.read(min(_CHUNK, n_bytes))
        if not chunk:
            raise DigestMismatch("unreadable or truncated (shorter than its content digest says)")
        h.update(chunk)
        n_bytes -= len(chunk)
    return h.hexdigest()


def seal_zip(path: str | os.PathLike) -> str:
    """Give the just-written zip archive ``path`` (one without a comment, as torch.save and np.savez
    write) its content digest as comment; returns the digest. Call it on the temporary file of
    :func:`atomic_path`, before the rename."""
    with open(path, "r+b") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(max(size - 22, 0))
        end = fh.read(22)
        if size < 22 or end[:4] != _END_RECORD or end[-2:] != b"\0\0":
            raise ValueError(f"{path}: not a zip archive without a comment; cannot seal it")
        digest = _digest_of(fh, size - 2)
        fh.seek(size - 2)
        fh.write(_DIGEST_COMMENT_LEN.to_bytes(2, "little") + DIGEST_TAG + digest.encode())
    return digest


def verify_zip(path: str | os.PathLike) -> bool:
    """Check ``path`` against the digest :func:`seal_zip` gave it: True when it matches, False when
    the file carries none (written before digests: cannot be verified, a warning once per directory).

    Raises :class:`DigestMismatch` when the bytes differ from the digest or the end record is not
    one of those two forms (truncated, overwritten), ``FileNotFoundError`` when it is missing.
    """
    path = Path(path)
    with open(path, "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        n = 22 + _DIGEST_COMMENT_LEN
        fh.seek(max(size - n, 0))
        tail = fh.read(n)
        if len(tail) == n and tail[:4] == _END_RECORD and tail[20:22] == _DIGEST_COMMENT_LEN.to_bytes(2, "little"):
            comment = tail[22:]
            if not comment.startswith(DIGEST_TAG) or not re.fullmatch(rb"[0-9a-f]{64}", comment[len(DIGEST_TAG) :]):
                raise DigestMismatch("altered since it was written (its content digest is damaged)")
            if _digest_of(fh, size - _DIGEST_COMMENT_LEN - 2) != comment[len(DIGEST_TAG) :].decode():
                raise DigestMismatch(
                    "altered since it was written (its bytes do not match the content digest it carries)"
                )
            return True
        if tail[-22:-18] == _END_RECORD and tail[-2:] == b"\0\0":
            if path.parent not in _unverified_dirs:
                _unverified_dirs.add(path.parent)
                log.warning(
                    "%s: written without a content digest (by trustcal before digests), so it cannot be "
                    "verified; used as it is (and so are other such files in %s, without another warning)",
                    path,
                    path.parent,
                )
            return False
        raise DigestMismatch("unreadable or truncated (no zip end record where one should be)")
