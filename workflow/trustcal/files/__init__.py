"""File helpers shared by every stage: atomic writes, readable load errors and pickles read without running code.

Every output is written to a temporary name in the target's directory and then
renamed, so a crash never leaves a half-written file that looks complete; a
write the disk refuses (full, read-only) ends in one line naming the file, the
cause and the fix (:class:`DiskError`). No reader executes a file's contents:
the pickled formats trustcal reads are unpickled with plain data and NumPy
arrays only (:func:`load_plain_pickle`).

The helpers live in submodules, one concern each, and are imported from here: :mod:`.atomic` (atomic files
and folders), :mod:`.locks` (one writer at a time), :mod:`.disk` (:class:`DiskError`), :mod:`.digests`
(zip archives sealed with their content digest), :mod:`.pickles` (:func:`load_plain_pickle`) and
:mod:`.results` (the tables' writers and readers, the results contract: :func:`run_key`, :func:`read_seeds`).
"""

from trustcal.files.atomic import (
    atomic_directory,
    atomic_path,
    refuse_read_only,
    written_files,
)
from trustcal.files.digests import (
    DIGEST_TAG,
    DigestMismatch,
    seal_zip,
    verify_zip,
)
from trustcal.files.disk import (
    DISK_FAULTS,
    FULL_DISK,
    DiskError,
    check_writable,
    disk_error,
    disk_errors,
    full_disk_cause,
)
from trustcal.files.locks import (
    remove_stale_temporaries,
    writer_lock,
)
from trustcal.files.pickles import (
    NUMPY_PICKLE_GLOBALS,
    PLAIN_PICKLE_GLOBALS,
    RefusedPickle,
    load_plain_pickle,
)
from trustcal.files.results import (
    SEED_RE,
    path_seed,
    read_result_csv,
    read_result_npz,
    read_seeds,
    run_key,
    write_csv,
    write_npz,
)

__all__ = [
    "DIGEST_TAG",
    "DISK_FAULTS",
    "DigestMismatch",
    "DiskError",
    "FULL_DISK",
    "NUMPY_PICKLE_GLOBALS",
    "PLAIN_PICKLE_GLOBALS",
    "RefusedPickle",
    "SEED_RE",
    "atomic_directory",
    "atomic_path",
    "check_writable",
    "disk_error",
    "disk_errors",
    "full_disk_cause",
    "load_plain_pickle",
    "path_seed",
    "read_result_csv",
    "read_result_npz",
    "read_seeds",
    "refuse_read_only",
    "remove_stale_temporaries",
    "run_key",
    "seal_zip",
    "verify_zip",
    "write_csv",
    "write_npz",
    "writer_lock",
    "written_files",
]
