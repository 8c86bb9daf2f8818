"""The networks and their training: the paper's two (models), the others (networks), the stacked multi-seed engine
and the plain trainer (engine), the resumable loop."""
