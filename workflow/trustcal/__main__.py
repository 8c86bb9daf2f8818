"""``python -m trustcal assess …`` — the same as the ``trustcal`` command."""

from trustcal.cli import main

raise SystemExit(main())
