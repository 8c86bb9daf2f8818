"""The networks and their training: the paper's two (models), the others (networks), how one seed is trained
(config), the stacked multi-seed engine (engine), the plain trainer and loop (plain), checkpoints and resuming
(checkpoints), the resumable loop (loop)."""
