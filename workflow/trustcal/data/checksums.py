"""What the staging of every dataset kind shares: the error, the arrays read, how a file was accepted
(the ``verified`` column of ``raw_manifest.tsv``), md5 checks and their error lines, the fetch of a
missing file checked by its md5, and the check of labels."""

from __future__ import annotations

import hashlib
import logging
import urllib.error
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torchvision.datasets as tvd

from trustcal import registry
from trustcal.errors import TrustcalError
from trustcal.files import atomic_path
from trustcal.registry import DatasetSpec

log = logging.getLogger(__name__)

# The paper's datasets: the other entries of the per-dataset verify_checksums a fix suggests.
DATASETS = registry.PAPER_DATASETS

# How a file was accepted (the `verified` column of raw_manifest.tsv).
ARCHIVE_MD5 = "archive-md5"
CONTENT_MD5 = "content-md5"
NOT_CHECKED = "not checked (verify_checksums: false)"
USER_FILE = "user file"  # a user's dataset: no official md5 exists; the manifest records the file's


class DatasetUnavailable(TrustcalError):
    """Dataset files missing, wrong or not fetchable; the message names the files and the fix."""


class RawDataset(NamedTuple):
    """A dataset as read from its files: uint8 NCHW images (a user's table: float64 (N, F) features), int64
    labels, the class names in label order."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    classes: tuple[str, ...]


def torchvision_class(spec: DatasetSpec):
    """The torchvision class whose file names, URLs and md5s a registered dataset uses."""
    return getattr(tvd, spec.torchvision)


def file_md5(path: str | Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def mismatch_line(path: Path, found: str, archive: tuple[str, str], content: tuple[str, str | None]) -> str:
    """The error line for ``path``: the md5 found and the official (name, md5) of archive and content."""
    if content[1] is None:  # an IDX dataset whose archive md5s alone are known
        return f"  {path}: md5 {found}; official md5: archive {archive[0]} {archive[1]} (its content's is unknown)"
    return f"  {path}: md5 {found}; official md5s: archive {archive[0]} {archive[1]}, content {content[0]} {content[1]}"


def checksums_off(dataset: str) -> str:
    """The configuration that switches the md5 checks off for ``dataset`` alone."""
    others = "".join(f", {d}: true" for d in DATASETS if d != dataset)
    return (
        f"verify_checksums: {{{dataset}: false{others}}} in config.yaml "
        f"(or --config 'verify_checksums={{{dataset}: false{others}}}')"
    )


def rejected(
    spec: DatasetSpec, problems: list[str], official: str = "matching the archive or the content md5"
) -> DatasetUnavailable:
    return DatasetUnavailable(
        f"{spec.name}: staged file(s) failed verification (left on disk unchanged):\n"
        + "\n".join(problems)
        + f"\nFix: replace each with the official file ({official}), or, "
        f"for a dataset rebuilt from another source, set {checksums_off(spec.name)}."
    )


def instructions_text(head: str, lines: list[str], checked: str) -> str:
    """The staging instructions: ``head``, one line per file, and how the staged files are checked."""
    return (
        head
        + "\n"
        + "\n".join(lines)
        + f"\nthen rerun. Staged files are checked {checked}, used without network, and never deleted."
    )


AIR_GAPPED = "docs/usage.md#the-datasets"  # the route without network: files staged by hand, download: false


def require_download(
    spec: DatasetSpec, data_dir: Path, missing: list[str], allow_download: bool, instructions: str
) -> None:
    """Refuse to go on without the ``missing`` files when downloading is switched off; ``instructions``: which
    files to stage where."""
    if not allow_download:
        raise DatasetUnavailable(
            f"{spec.name}: not found in {data_dir} and downloading is switched off (config: download: false): "
            f"{', '.join(missing)}.\n{instructions}\n"
            f"Fix: stage the files listed above by hand (the air-gapped route: {AIR_GAPPED}), then rerun."
        )


def fetch(spec: DatasetSpec, urls: list[str], target: Path, md5: str, instructions: str) -> None:
    """Download the missing ``target`` from the first of ``urls`` that works, checked against ``md5``
    (``instructions``: which files to stage where, in the error when none works).

    torchvision downloads to a temporary name, renamed when verified; a corrupt
    download (wrong md5) is deleted and fetched once more from the same URL.
    """
    from torchvision.datasets import utils as tvu

    errors = []
    for url in urls:
        for attempt in (1, 2):
            try:
                with atomic_path(target) as tmp:
                    tvu.download_url(url, str(tmp.parent), tmp.name, md5)
                log.info("%s: downloaded from %s", target, url)
                return
            except RuntimeError:  # torchvision's md5 check failed; atomic_path deleted the download
                errors.append(f"{url}: corrupt download (md5 is not {md5})")
                if attempt == 1:
                    log.warning("%s: corrupt download from %s deleted; fetching once more", target, url)
            except urllib.error.URLError as exc:  # the host out of reach: its reason ("Name or service not known")
                errors.append(f"{url}: {getattr(exc, 'reason', exc)}")
                break
            except (OSError, ValueError) as exc:
                errors.append(f"{url}: {type(exc).__name__}: {exc}")
                break
    raise DatasetUnavailable(
        f"{spec.name}: {target} is missing and could not be fetched ({'; '.join(errors)}).\n"
        f"{instructions}\n"
        "Fix: without network access to the dataset hosts, stage the files listed above by hand and run with "
        f"download: false (--config download=false): the air-gapped route, {AIR_GAPPED}."
    )


def write_extracted(target: Path, content: bytes) -> None:
    try:
        with atomic_path(target) as tmp:
            tmp.write_bytes(content)
    except OSError as exc:
        raise DatasetUnavailable(
            f"{target}: cannot write the extracted file ({exc}). Fix: make {target.parent} writable, "
            "or copy the archives into a writable data_dir."
        ) from None


def check_labels(spec: DatasetSpec, y: np.ndarray, num_classes: int, where: str | Path, fix: str) -> None:
    """Refuse labels outside 0..num_classes−1 (a network has one output per class); ``fix``: what follows
    the message's "Fix: "."""
    bad = np.unique(y[(y < 0) | (y >= num_classes)])
    if len(bad):
        shown = ", ".join(map(str, bad[:5].tolist())) + (", …" if len(bad) > 5 else "")
        raise DatasetUnavailable(
            f"{spec.name}: {where}: label(s) {shown} outside 0..{num_classes - 1} ({num_classes} classes). Fix: {fix}"
        )


def check_readable(
    spec: DatasetSpec, data_dir: Path, path: Path, md5: str, verify_checksums: bool, instructions: str
) -> None:
    """Before reading a staged file: it is there, and (when asked) its md5 is the official one; else the error
    naming it, with ``instructions``: the files to stage."""
    if not path.is_file():
        raise DatasetUnavailable(
            f"{spec.name}: cannot read the dataset in {data_dir} ({path} is missing).\n{instructions}"
        )
    if verify_checksums and (found := file_md5(path)) != md5:
        raise DatasetUnavailable(
            f"{spec.name}: cannot read the dataset in {data_dir} ({path}: md5 {found}, not the official {md5}).\n"
            f"{instructions}"
        )
