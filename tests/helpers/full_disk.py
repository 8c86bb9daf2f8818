"""A full disk without mounting one: files that refuse writes past a few kilobytes with ENOSPC.

:func:`fill_pdfs` makes matplotlib write every PDF of a temporary name (``.x.pdf.*.tmp``, as
``trustcal.files.atomic_path`` names them) into a :class:`FullDisk`; matplotlib's PDF writer then
fails again as it closes the stream the disk refused (``AttributeError: 'Stream' object has no
attribute 'pos'`` or a ``zlib.error``), the full disk only as the context: the error a real full disk
gives (tests/workflow/test_faults_disk.py meets it on a small tmpfs where mounting is allowed). Forked
figure workers inherit it.
"""

import errno
import io
import os


class FullDisk(io.FileIO):
    """A file that takes ``room`` bytes, then refuses every write as a full disk does."""

    room = 5000

    def write(self, data):
        if self.tell() + len(data) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return super().write(data)


def fill_pdfs(monkeypatch) -> None:
    """Every PDF matplotlib writes to a temporary name goes into a :class:`FullDisk` (until the test ends)."""
    from matplotlib import cbook

    real = cbook.to_filehandle

    def to_filehandle(fname, flag="r", return_opened=False, encoding=None):
        if isinstance(fname, (str, os.PathLike)) and ".pdf." in os.path.basename(fname) and "w" in flag:
            fh = FullDisk(os.fspath(fname), "wb")
            return (fh, True) if return_opened else fh
        return real(fname, flag, return_opened, encoding)

    monkeypatch.setattr(cbook, "to_filehandle", to_filehandle)
