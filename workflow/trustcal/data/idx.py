"""IDX (MNIST, Fashion-MNIST, KMNIST): four .gz archives or their uncompressed files in ``<Class>/raw``.

MNIST's uncompressed IDX files have official md5s (the registry's ``content_md5``), the other IDX
datasets' archives only."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import logging
import zlib
from pathlib import Path

import numpy as np
import torchvision.datasets as tvd

from trustcal import registry
from trustcal.data import checksums
from trustcal.registry import DatasetSpec

log = logging.getLogger(__name__)

MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
# Official md5s: of the .gz archives (torchvision's list) and of the uncompressed IDX files (the registry's).
MNIST_ARCHIVE_MD5 = dict(tvd.MNIST.resources)
MNIST_CONTENT_MD5 = dict(registry.MNIST.content_md5)


class _Mismatch(Exception):
    """A staged file failed its check; the message is one line of the user's error."""


class _Unverifiable(Exception):
    """A staged file no official md5 can check (an uncompressed IDX file of a dataset whose archive md5s
    alone are known); the message is one line of the user's error."""


@dataclasses.dataclass(frozen=True)
class IdxFiles:
    """Where an IDX dataset's files are and the official md5s they are checked against."""

    raw: str  # the folder, relative to data_dir: <Class>/raw, where torchvision reads them
    names: tuple[str, ...]  # the uncompressed files, in torchvision's order
    archive_md5: dict[str, str]  # <name>.gz → md5 (torchvision's)
    content_md5: dict[str, str]  # <name> → md5, where known (MNIST's)
    mirrors: tuple[str, ...]


def idx_files(spec: DatasetSpec) -> IdxFiles:
    tv = checksums.torchvision_class(spec)
    archives = [url.rsplit("/", 1)[-1] for url, _ in tv.resources]
    if spec.torchvision == "MNIST":  # this module's tables, read now: tests put synthetic files' md5s in them
        archive_md5, content_md5 = MNIST_ARCHIVE_MD5, MNIST_CONTENT_MD5
    else:
        archive_md5 = {url.rsplit("/", 1)[-1]: md5 for url, md5 in tv.resources}
        content_md5 = dict(spec.content_md5)
    return IdxFiles(
        raw=f"{tv.__name__}/raw",
        names=tuple(a.removesuffix(".gz") for a in archives),
        archive_md5=archive_md5,
        content_md5=content_md5,
        mirrors=tuple(getattr(tv, "mirrors", ())) or tuple(url.rsplit("/", 1)[0] + "/" for url, _ in tv.resources),
    )


def instructions(spec: DatasetSpec, data_dir: Path) -> str:
    """Which IDX files to put where, with the archive and content md5s they are checked against."""
    files = idx_files(spec)
    checked = "by archive or content md5"
    if not files.content_md5:
        checked = "by archive md5 (an uncompressed file against the content of its archive beside it)"
    head = (
        f"Download the four archives from {files.mirrors[0]} on a machine with network access "
        f"and copy them (or their uncompressed contents) to {data_dir / files.raw}/:"
    )
    lines = [
        f"  {name}.gz  (archive md5 {files.archive_md5[name + '.gz']}; uncompressed {name}: "
        + (
            f"md5 {files.content_md5[name]})"
            if name in files.content_md5
            else "no official md5, checked only when its archive is beside it)"
        )
        for name in files.names
    ]
    return checksums.instructions_text(head, lines, checked)


def stage(spec: DatasetSpec, data_dir: Path, verify: bool, allow_download: bool) -> dict[str, str]:
    """Check and extract the IDX files in ``data_dir``, fetch the missing ones; each file → how it was verified."""
    files = idx_files(spec)
    raw = data_dir / files.raw
    how, problems, unverifiable = {}, [], []
    for name in files.names:
        try:
            how[name] = _stage_idx_file(raw, name, files, verify)
        except _Mismatch as exc:
            problems.append(str(exc))
        except _Unverifiable as exc:
            unverifiable.append(str(exc))
    if problems:
        raise checksums.rejected(spec, problems, *([] if files.content_md5 else ["matching its archive md5"]))
    if unverifiable:
        raise checksums.DatasetUnavailable(
            f"{spec.name}: staged file(s) cannot be checked: only the md5s of {spec.title}'s .gz archives are "
            "known (torchvision's), not those of their uncompressed contents (left on disk unchanged):\n"
            + "\n".join(unverifiable)
            + "\nFix: put each file's .gz archive (named above) beside it, where it is checked and the file "
            f"against its content; or, for a dataset rebuilt from another source, set {checksums.checksums_off(spec.name)}."
        )
    missing = [name for name in files.names if how[name] is None]
    if missing:
        checksums.require_download(
            spec, data_dir, [f"{name}.gz" for name in missing], allow_download, instructions(spec, data_dir)
        )
    for name in missing:
        archive = f"{name}.gz"
        urls = [f"{mirror}{archive}" for mirror in files.mirrors]
        checksums.fetch(spec, urls, raw / archive, files.archive_md5[archive], instructions(spec, data_dir))
        how[name] = _stage_idx_file(raw, name, files, verify=True)
    return {str(raw / name): how[name] for name in files.names}


def _stage_idx_file(raw: Path, name: str, files: IdxFiles, verify: bool) -> str | None:
    """Accept ``raw/name``, or extract it from ``raw/name.gz``; how it was verified (None: neither is there).

    An uncompressed file whose official md5 is unknown (Fashion-MNIST's, KMNIST's) is checked against
    the content of its archive beside it, and cannot be checked without one. Raises :class:`_Mismatch`
    when a file fails its check, :class:`_Unverifiable` when it cannot be checked.
    """
    target, archive = raw / name, raw / f"{name}.gz"
    archive_md5, content_md5 = files.archive_md5[archive.name], files.content_md5.get(name)
    official = (archive.name, archive_md5), (name, content_md5)
    if target.exists() and not (verify and content_md5 is None and archive.exists()):
        if not verify:
            return checksums.NOT_CHECKED
        if content_md5 is None:
            raise _Unverifiable(f"  {target}: stage {archive.name} (archive md5 {archive_md5})")
        found = checksums.file_md5(target)
        if found != content_md5:
            raise _Mismatch(checksums.mismatch_line(target, found, *official))
        return checksums.CONTENT_MD5
    if not archive.exists():
        return None
    found = checksums.file_md5(archive)
    try:
        content = gzip.decompress(archive.read_bytes())
    except (OSError, EOFError, zlib.error) as exc:
        raise _Mismatch(
            checksums.mismatch_line(archive, f"{found} (not a readable gzip file: {exc})", *official)
        ) from None
    how = checksums.NOT_CHECKED if not verify else checksums.ARCHIVE_MD5 if found == archive_md5 else None
    if how is None:
        if content_md5 is None:
            raise _Mismatch(checksums.mismatch_line(archive, found, *official))
        content_found = hashlib.md5(content).hexdigest()
        if content_found != content_md5:
            raise _Mismatch(checksums.mismatch_line(archive, f"{found} (uncompressed: {content_found})", *official))
        how = checksums.CONTENT_MD5
    if target.exists():  # staged beside its verified archive: it must be the archive's content
        found = checksums.file_md5(target)
        if found != hashlib.md5(content).hexdigest():
            raise _Mismatch(f"  {target}: md5 {found}, not the content of {archive} beside it (which is verified)")
        return how
    checksums.write_extracted(target, content)
    log.info("%s: extracted from %s", target, archive.name)
    return how


def load(spec: DatasetSpec, data_dir: Path) -> tuple[np.ndarray, ...]:
    """The four IDX files as torchvision's class reads them (no pickle in them; staging verified them):
    (x_train, y_train, x_test, y_test), every label checked to be one of the dataset's classes."""
    out = []
    for train in (True, False):
        try:
            ds = checksums.torchvision_class(spec)(str(data_dir), train=train, download=False)
        except RuntimeError as exc:
            raise checksums.DatasetUnavailable(
                f"{spec.name}: cannot read the dataset in {data_dir} ({exc}).\n{instructions(spec, data_dir)}"
            ) from None
        x = np.asarray(ds.data, dtype=np.uint8)
        out += [np.ascontiguousarray(x[:, None, :, :]), np.asarray(ds.targets, dtype=np.int64)]
    fix = f"replace them with the official files.\n{instructions(spec, data_dir)}"
    for y in out[1::2]:
        checksums.check_labels(spec, y, len(spec.classes), data_dir / idx_files(spec).raw, fix)
    return tuple(out)
