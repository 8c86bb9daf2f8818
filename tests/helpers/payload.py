"""A pickle that runs a command when it is loaded: what a crafted file in place of a checkpoint, a CIFAR-10
batch or a loss history could hide. The loaders' tests check that they refuse it and that it never ran."""

import os


class Payload:
    """Pickles as a call to ``os.system("touch MARKER")``: loading it with ``pickle.load`` creates ``marker``."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch '{self.marker}'",)


def yaml_payload(marker) -> str:
    """A YAML document whose ``!!python/object/apply`` tag runs the same command under an unsafe loader."""
    return f"- !!python/object/apply:os.system [\"touch '{marker}'\"]\n"
