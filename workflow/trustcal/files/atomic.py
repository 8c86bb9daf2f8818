"""Atomic writes: a file or a folder written under a temporary name beside its target and renamed onto it, so a
crash never leaves a half-written output that looks complete."""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

from trustcal.errors import TrustcalError
from trustcal.files.disk import DiskError, disk_errors
from trustcal.files.locks import remove_stale_temporaries, writer_lock

log = logging.getLogger(__name__)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` on success.

    On any exception the temporary file is removed and ``path`` is left as it was; a write the
    disk refused (full, read-only, not ours) raises :class:`DiskError` (:func:`disk_errors`).
    """
    path = Path(path)
    with disk_errors(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path.parent, glob.escape(path.name))
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        tmp = Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it private; the result is an ordinary file
    try:
        with disk_errors(path):  # before the half-written file is removed: it tells a full disk
            yield tmp
            os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def refuse_read_only(path: Path, names: Iterable[str] | None = None) -> None:
    """Raise :class:`TrustcalError` if ``path`` or anything in it is read-only (no owner write bit); with
    ``names`` (paths relative to ``path``), only ``path``, those of them that exist and their folders.

    A read-only result was protected on purpose. The mode bits are checked, not :func:`os.access`,
    which says yes to root whatever the bits.
    """
    if names is None:
        checked = [path, *path.rglob("*")]
    else:
        inside = {PurePosixPath(n) for n in names}
        inside |= {parent for n in inside for parent in n.parents if parent != PurePosixPath(".")}
        checked = [path, *(p for p in (path / n for n in sorted(inside)) if os.path.lexists(p))]
    for p in checked:
        mode = p.lstat().st_mode
        if not p.is_symlink() and not mode & stat.S_IWUSR:
            what = "the output directory" if p == path else f"{p.relative_to(path)} in the output directory"
            raise TrustcalError(
                f"{path}: {what} is read-only (mode {stat.S_IMODE(mode):o}), so trustcal will not replace it. "
                f"Fix: choose another output directory, or make it writable (chmod -R u+w {path})."
            )


def written_files(directory: str | os.PathLike) -> list[str]:
    """Every file under ``directory`` (symbolic links included, folders not), as sorted paths relative
    to it with ``/``: what a writer of :func:`atomic_directory` lists in its marker."""
    return sorted(_tree(Path(directory))[0])


def _tree(root: Path) -> tuple[set[str], set[str]]:
    """(files, folders) under ``root``, relative, with ``/``; a symbolic link (to a folder too) is a file."""
    files, folders = set(), set()
    for parent, dirnames, filenames in os.walk(root):
        rel = PurePosixPath(Path(parent).relative_to(root).as_posix())
        for name in list(dirnames):
            if os.path.islink(os.path.join(parent, name)):
                dirnames.remove(name)
                files.add((rel / name).as_posix())
            else:
                folders.add((rel / name).as_posix())
        files.update((rel / name).as_posix() for name in filenames)
    return files, folders


def _listed(path: Path) -> set[str]:
    """The files listed in ``path`` (JSON whose ``written`` is a list of paths relative to its folder):
    none when it is missing, not such JSON, or lists none (an older marker, a copied one). A path that
    would leave the folder is ignored."""
    try:
        listed = json.loads(path.read_text()).get("written")
    except (OSError, ValueError, AttributeError):
        return set()
    names = set()
    for name in listed if isinstance(listed, list) else ():
        rel = PurePosixPath(name) if isinstance(name, str) else None
        if rel is not None and rel.parts and not rel.is_absolute() and ".." not in rel.parts:
            names.add(rel.as_posix())
    return names


def _plain(path: Path, rel: str) -> bool:
    """Whether every folder between ``path`` and ``path/rel`` is a folder, not a link or a file."""
    parent = path
    for part in PurePosixPath(rel).parts[:-1]:
        parent = parent / part
        if parent.is_symlink() or not parent.is_dir():
            return False
    return True


def _replaceable(path: Path, marker: str) -> set[str]:
    """Check that ``path`` may receive an :func:`atomic_directory` write; the files in it that were
    written that way (listed in its marker, or in the journal of a write interrupted while moving its
    files into place), which a new write removes when it does not write them again."""
    if not path.exists():
        return set()
    if not path.is_dir():
        raise TrustcalError(f"{path}: exists and is not a directory. Fix: choose another output directory.")
    ours = _listed(path / marker) | _listed(path / f"{marker}.incomplete")
    refuse_read_only(path, ours)  # the files a write would replace: also checked once they are known (_merge)
    journal = path / f"{marker}.incomplete"
    if not (path / marker).exists() and not journal.exists() and any(not p.is_dir() for p in path.rglob("*")):
        raise TrustcalError(
            f"{path}: the output directory holds files that trustcal did not write, which it would replace. "
            "Fix: choose a new or empty directory."
        )
    return ours


def _conflicts(path: Path, files: set[str], folders: set[str]) -> None:
    """Raise :class:`TrustcalError` for a file of ``path`` in the way of the new ``files`` and ``folders``:
    a folder where a file goes, a file or link where a folder goes."""
    for rel in sorted(files | folders):
        parts = PurePosixPath(rel).parts
        for i in range(1, len(parts) + (rel in folders)):
            where = path.joinpath(*parts[:i])
            if os.path.lexists(where) and (where.is_symlink() or not where.is_dir()):
                raise TrustcalError(
                    f"{where}: a {'link' if where.is_symlink() else 'file'} where trustcal writes the folder "
                    f"{'/'.join(parts[:i])}/. Fix: move it away, or choose another output directory."
                )
        where = path / rel
        if rel in files and where.is_dir() and not where.is_symlink():
            raise TrustcalError(
                f"{where}: a folder where trustcal writes the file {rel}. "
                "Fix: move it away, or choose another output directory."
            )


def _merge(tmp: Path, path: Path, marker: str, ours: set[str]) -> list[str]:
    """Move the files of ``tmp`` into the existing folder ``path``, the marker last; remove the files of
    ``ours`` (written there before) that ``tmp`` does not hold; every other file stays. Returns those
    kept (relative paths).

    Each file replaced or removed is first moved into a backup folder beside ``path``, so a failure on
    the way moves everything back. While the files move, ``path`` holds no marker and a journal
    (``{marker}.incomplete``) lists every file trustcal may have written there: a crash leaves a folder
    that does not look complete, which the next write accepts and cleans as it would a complete one.
    """
    files, folders = _tree(tmp)
    journal = f"{marker}.incomplete"
    _conflicts(path, files, folders)
    refuse_read_only(path, files | folders)
    before = _tree(path)[0]

    def removable(rel: str) -> bool:  # a file or link still there, reached through folders only
        where = path / rel
        return os.path.lexists(where) and _plain(path, rel) and (where.is_symlink() or not where.is_dir())

    stale = sorted(rel for rel in ours - files - {journal} if removable(rel))
    kept = sorted(before - files - ours - {journal})
    backup = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
    moved: list[tuple[Path, Path]] = []  # renames made, undone last first on a failure
    made: list[Path] = []  # folders made in path

    def folder(where: Path, record: bool) -> None:
        missing = [p for p in [where, *where.parents] if not p.exists()]
        for p in reversed(missing):
            p.mkdir()
            if record:
                made.append(p)

    def move(src: Path, dst: Path) -> None:
        os.replace(src, dst)
        moved.append((src, dst))

    def put_aside(rel: str) -> None:
        folder((backup / "old" / rel).parent, record=False)
        move(path / rel, backup / "old" / rel)

    def put(src: Path, rel: str) -> None:
        if os.path.lexists(path / rel):
            put_aside(rel)
        folder((path / rel).parent, record=True)
        move(src, path / rel)

    undone = False
    try:
        (backup / "journal").write_text(json.dumps({"written": sorted(ours | files)}, indent=2) + "\n")
        put(backup / "journal", journal)
        if os.path.lexists(path / marker):
            put_aside(marker)  # from here until the new marker, path does not look complete
        for rel in sorted(files - {marker}):
            put(tmp / rel, rel)
        for rel in sorted(folders):
            folder(path / rel, record=True)
        for rel in stale:
            put_aside(rel)
        if marker in files:
            put(tmp / marker, marker)
        undone = True  # done, nothing to undo
    except BaseException:
        try:
            for src, dst in reversed(moved):
                os.replace(dst, src)
            for p in reversed(made):
                p.rmdir()
            undone = True
        except OSError as exc:  # the journal stays: the next write cleans up
            log.error("%s: could not move the files of an unfinished write back (%s); rerun", path, exc)
        raise
    finally:
        if undone:
            shutil.rmtree(backup, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.unlink(path / journal)
    for rel in stale:  # the folders they leave empty, up to path (not those the new write has)
        for parent in PurePosixPath(rel).parents:
            if parent == PurePosixPath(".") or parent.as_posix() in folders:
                break
            try:
                (path / parent).rmdir()
            except OSError:
                break
    return kept


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike, marker: str, kept: list[str] | None = None) -> Iterator[Path]:
    """Yield a temporary directory next to ``path``; on success its files take their places in ``path``.

    ``path`` may be missing (the temporary directory is renamed onto it), empty, or a directory written
    this way before (one that holds ``marker``); anything else, a read-only ``path``, or a read-only file
    in it that the write would replace or remove (:func:`refuse_read_only`), raises :class:`TrustcalError`
    before any file of ``path`` is touched.

    A marker written as JSON with ``written``, the list of the files written (:func:`written_files`),
    lets the next write remove those it does not write again; every file not listed there and not
    written again (the user's own: notes, data, a figure of theirs) stays, and is named in ``kept``
    (extended) and the log. The marker is moved into place last (:func:`_merge`): a crash never leaves
    a folder that looks complete. One write at a time (:func:`writer_lock`): another process writing
    ``path`` is an error. On any exception ``path`` is left as it was, and the temporary directory and
    the parent directories created for it are removed.
    """
    path = Path(path)
    if path.name in ("", ".."):  # "." or "a/..": the folder's own name, for the temporaries beside it
        path = Path(os.path.abspath(path))
    created = [p for p in reversed(path.parents) if not p.exists()]
    done = False
    try:
        with disk_errors(path):
            path.parent.mkdir(parents=True, exist_ok=True)
        with writer_lock(path):
            ours = _replaceable(path, marker)
            with disk_errors(path):
                remove_stale_temporaries(path.parent, glob.escape(path.name))
                tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
                os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it private; the result is an ordinary directory
            try:
                try:
                    with disk_errors(path):
                        yield tmp
                except DiskError as exc:  # a file written inside: named as it will be, not by its temporary name
                    message = str(exc).replace(os.path.abspath(tmp), os.path.abspath(path)).replace(str(tmp), str(path))
                    raise DiskError(message) from None
                with disk_errors(path):
                    if path.exists():
                        left = _merge(tmp, path, marker, ours)
                    else:
                        os.replace(tmp, path)
                        left = []
                done = True
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)
        if left:
            log.info("%s: kept %d file(s) trustcal did not write: %s", path, len(left), ", ".join(left))
        if kept is not None:
            kept.extend(left)
    finally:
        if not done:
            for p in reversed(created):
                with contextlib.suppress(OSError):
                    p.rmdir()
