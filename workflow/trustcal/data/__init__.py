"""The datasets: download and staging (staging; per kind of files: idx, cifar, svhn, user; checksums), the
train/validation/test splits, synthetic stand-ins for tests."""
