"""What every example shares: where to write its figures."""

import argparse
from pathlib import Path


def output_dir(description: str) -> Path:
    """Parse ``--out DIR`` (default ``examples-output``) and create it."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", default="examples-output", help="folder for the figures (default: %(default)s)")
    out = Path(parser.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    return out
