"""SVHN: ``train_32x32.mat`` and ``test_32x32.mat`` (MATLAB v5) in ``data_dir``, read with ``scipy.io.loadmat``
(no code in them); the ``extra`` split is not used."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from trustcal.data import checksums
from trustcal.registry import DatasetSpec

SVHN_SPLITS = ("train", "test")  # of torchvision's SVHN.split_list; "extra" is not used


def svhn_files(spec: DatasetSpec) -> dict[str, tuple[str, str, str]]:
    """split → (url, file name, md5), torchvision's, for the splits used."""
    return {split: tuple(checksums.torchvision_class(spec).split_list[split]) for split in SVHN_SPLITS}


def instructions(spec: DatasetSpec, data_dir: Path) -> str:
    """Which SVHN files to put where, with the md5s they are checked against."""
    head = f"Download these files on a machine with network access and copy them to {data_dir}/:"
    lines = [f"  {url}  (md5 {md5})" for url, _, md5 in svhn_files(spec).values()]
    return checksums.instructions_text(head, lines, "by md5")


def stage(spec: DatasetSpec, data_dir: Path, verify: bool, allow_download: bool) -> dict[str, str]:
    """Check the .mat files in ``data_dir``, fetch the missing ones; each file → how it was verified."""
    files = svhn_files(spec)
    how, problems = {}, []
    for _, filename, md5 in files.values():
        path = data_dir / filename
        if not path.exists():
            continue
        if not verify:
            how[filename] = checksums.NOT_CHECKED
        elif (found := checksums.file_md5(path)) != md5:
            problems.append(f"  {path}: md5 {found}; official md5 {md5}")
        else:
            how[filename] = checksums.CONTENT_MD5
    if problems:
        raise checksums.rejected(spec, problems, "matching its md5")
    missing = [(url, filename, md5) for url, filename, md5 in files.values() if filename not in how]
    if missing:
        checksums.require_download(
            spec, data_dir, [filename for _, filename, _ in missing], allow_download, instructions(spec, data_dir)
        )
    for url, filename, md5 in missing:
        checksums.fetch(spec, [url], data_dir / filename, md5, instructions(spec, data_dir))
        how[filename] = checksums.CONTENT_MD5
    return {str(data_dir / filename): how[filename] for _, filename, _ in files.values()}


def load(spec: DatasetSpec, data_dir: Path, verify_checksums: bool) -> tuple[np.ndarray, ...]:
    """SVHN's two .mat files as torchvision's ``SVHN`` reads them: X of shape (32, 32, 3, N) as NCHW, label 10
    as digit 0; each checked against its md5 first when asked."""
    out = []
    for _, filename, md5 in svhn_files(spec).values():
        path = data_dir / filename
        checksums.check_readable(spec, data_dir, path, md5, verify_checksums, instructions(spec, data_dir))
        out += _read_svhn_mat(spec, path, md5)
    return tuple(out)


def _read_svhn_mat(spec: DatasetSpec, path: Path, md5: str) -> list[np.ndarray]:
    try:
        import scipy.io
    except ImportError:
        raise checksums.DatasetUnavailable(
            f"{spec.name}: {path}: a MATLAB file, read with scipy, which is not installed. Fix: install it "
            "(pip install 'scipy>=1.11', or the calibration extra: pip install 'trustcal[calibration]')."
        ) from None

    fix = f"Fix: replace it with the official file ({path.name}, md5 {md5}), or rebuild it as a MATLAB v5 file"
    try:
        mat = scipy.io.loadmat(path, variable_names=["X", "y"])
    except (scipy.io.matlab.MatReadError, NotImplementedError, ValueError, TypeError, OSError, EOFError) as exc:
        raise checksums.DatasetUnavailable(f"{spec.name}: {path}: not a readable MATLAB file ({exc}). {fix}.") from None
    c, h, w = spec.shape
    x, y = mat.get("X"), mat.get("y")
    if x is None or y is None:
        found = ", ".join(k for k in mat if not k.startswith("__")) or "nothing"
        raise checksums.DatasetUnavailable(
            f"{spec.name}: {path}: not an SVHN file (no X and y; it holds {found}). {fix}."
        )
    if x.dtype != np.uint8 or x.ndim != 4 or x.shape[:3] != (h, w, c):
        raise checksums.DatasetUnavailable(
            f"{spec.name}: {path}: X is {x.dtype} of shape {x.shape}, not uint8 of shape ({h}, {w}, {c}, N). {fix}."
        )
    if y.size != x.shape[3] or y.dtype.kind not in "ui":
        raise checksums.DatasetUnavailable(
            f"{spec.name}: {path}: y is {y.dtype} of shape {y.shape}, not {x.shape[3]} integer labels. {fix}."
        )
    labels = y.astype(np.int64).reshape(-1)
    labels[labels == 10] = 0  # SVHN's label 10 is the digit 0, as torchvision maps it
    checksums.check_labels(
        spec, labels, len(spec.classes), path, f"{fix.removeprefix('Fix: ')} with labels 1..10 (10: the digit 0)."
    )
    return [np.ascontiguousarray(x.transpose(3, 2, 0, 1)), labels]
