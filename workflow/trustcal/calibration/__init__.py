"""Post-hoc calibrators fitted on one split's logits (docs/method.md §2)."""
