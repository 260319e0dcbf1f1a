"""``python -m manifold_dirac``: the ``manifold-dirac`` command (``tour``, ``run``, ``study``, ``list``)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
