"""The datasets: download and staging (staging; per kind of files: idx, cifar, svhn, user; a user's table:
tabular; checksums), the train/validation/test splits, synthetic stand-ins for tests."""
