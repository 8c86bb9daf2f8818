"""The datasets: download, staging and checksums, the train/validation/test splits, synthetic stand-ins for tests."""
