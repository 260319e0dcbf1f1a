"""Build the documentation site and save screenshots of pages with headless Chromium.

Checks by eye that the equations render (KaTeX, vendored under ``docs/javascripts/katex``, so no
network is needed). Not part of CI.

Usage (from the repository root)::

    PYTHONPATH=$PWD python tools/docs_screenshots.py                 # theory and schemes
    PYTHONPATH=$PWD python tools/docs_screenshots.py theory dirac    # other pages
    PYTHONPATH=$PWD python tools/docs_screenshots.py --out /tmp/shots --height 6000

Needs a Chromium binary (Debian: ``apt-get install chromium``; or set ``CHROMIUM``). The browser
runs with a fresh profile and without background networking, sync or component updates; the site
is opened from ``file://``. Each page is written to ``<out>/<page>.png``; a TeX error shows in red
in the picture (``katex-init.js`` renders with ``throwOnError: false``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--allow-file-access-from-files"]


def chromium() -> str:
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)  # type: ignore[return-value]
    sys.exit("no Chromium found: install it (Debian: apt-get install chromium) or set CHROMIUM=/path/to/binary")


def build(site: Path) -> None:
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)], cwd=ROOT, check=True)


def shoot(browser: str, page: Path, png: Path, width: int, height: int) -> None:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        cmd = [browser, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
               "--virtual-time-budget=5000", f"--screenshot={png}", page.as_uri()]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    if not png.exists():
        sys.exit(f"Chromium did not write {png}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pages", nargs="*", default=["theory", "schemes"], help="page names (default: theory schemes)")
    ap.add_argument("--out", default=str(ROOT / "build" / "screenshots"), help="output directory")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=4000)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    browser = chromium()
    with tempfile.TemporaryDirectory(prefix="site-") as tmp:
        site = Path(tmp) / "site"
        build(site)
        for name in args.pages:
            page = site / name / "index.html"
            if not page.exists():
                sys.exit(f"no page {name!r} in the built site ({page})")
            png = out / f"{name}.png"
            png.parent.mkdir(parents=True, exist_ok=True)   # tutorials/vehicle -> <out>/tutorials/
            shoot(browser, page, png, args.width, args.height)
            print(png)


if __name__ == "__main__":
    main()
