"""The training history table (``history.csv``): its columns and the best epoch.

Kept apart from the training loop so that reading a history needs no torch.
"""

from __future__ import annotations

import pandas as pd

HISTORY_COLUMNS = ("epoch", "train_loss", "train_accuracy", "val_loss", "val_accuracy", "seconds")


def best_epoch(history: pd.DataFrame) -> int:
    """The epoch of the lowest validation loss (the earliest on a tie; the last epoch when no loss is finite)."""
    h = history.sort_values("epoch")
    loss = pd.to_numeric(h["val_loss"], errors="coerce")
    if not loss.notna().any():
        return int(h["epoch"].iloc[-1])
    return int(h.loc[loss.idxmin(), "epoch"])
