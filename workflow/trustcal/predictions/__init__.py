"""Predictions from outside the workflow: readers per file format, epoch-series discovery, validation."""
