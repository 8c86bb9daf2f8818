"""``python -m trustcal assess …`` — the same as the ``trustcal`` command."""

from .cli import main

raise SystemExit(main())
