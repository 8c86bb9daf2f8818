"""The paper's networks and their training: models, the stacked multi-seed engine, the resumable loop."""
