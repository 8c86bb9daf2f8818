"""The numbers computed from predictions: calibration metrics, subjective-logic opinions and trust, bootstrap."""
