"""The study's figures as the repository keeps them."""

from __future__ import annotations

from pathlib import Path

from trustcal.files import atomic_path


def save_png(src: Path, dst: Path) -> None:
    """A 128-colour copy (a few hundred KB instead of a few MB) for the repository."""
    from PIL import Image

    im = Image.open(src).convert("RGB")
    with atomic_path(dst) as tmp:
        im.quantize(colors=128, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
            tmp, format="PNG", optimize=True
        )
