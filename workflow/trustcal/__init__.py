"""trustcal: subjective-logic trust opinions and calibration metrics for classifiers.

The package is importable without torch: modules that need it (``models``,
``train``, ``data``, ``logits``) import it themselves.
"""

__version__ = "0.1.0"
