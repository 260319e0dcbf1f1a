"""Build the documentation site, check every page in headless Chromium, and screenshot it at full height.

For each page of the built site the browser loads it from ``file://`` (no network: KaTeX and the
code highlighting are vendored) and a small script measures, after the page has rendered:

* the page's full height (the screenshot is taken at that height, up to ``--max-height``);
* **broken images** (an ``<img>`` that did not load);
* **TeX errors** (KaTeX renders with ``throwOnError: false``: an error is a red ``.katex-error``);
* **literal markup** left in the text: Sphinx roles (``:class:``, ``:meth:``, ...) or double backticks;
* **tables wider than the column** that cannot scroll (the site's CSS makes them scroll).

It prints one line per page and a summary, and exits with status 1 when a check failed, so it can
run as part of the docs build; the screenshots are for looking at (``<out>/<page>.png``).

Usage (from the repository root)::

    PYTHONPATH=$PWD python tools/docs_screenshots.py                  # every page
    PYTHONPATH=$PWD python tools/docs_screenshots.py index api/running
    PYTHONPATH=$PWD python tools/docs_screenshots.py --out /tmp/shots --no-shots   # checks only

Needs a Chromium binary (Debian: ``apt-get install chromium``; or set ``CHROMIUM``). The browser
runs with a fresh profile and without background networking, sync or component updates.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--allow-file-access-from-files",
         "--disable-dev-shm-usage"]

# run in the page after it has rendered: the measurements, written into the DOM for --dump-dom to read
PROBE = """
<script>
window.addEventListener("load", function () {
  setTimeout(function () {
    var text = document.querySelector("[role=main]") ? document.querySelector("[role=main]").innerText : "";
    var wide = [];
    document.querySelectorAll("[role=main] table").forEach(function (t) {
      var box = t.parentElement.getBoundingClientRect(), own = t.getBoundingClientRect();
      var scrolls = ["auto", "scroll"].indexOf(getComputedStyle(t).overflowX) >= 0 ||
                    ["auto", "scroll"].indexOf(getComputedStyle(t.parentElement).overflowX) >= 0;
      if (own.width > box.width + 1 && !scrolls) wide.push(Math.round(own.width));
    });
    var report = {
      height: Math.max(document.documentElement.scrollHeight, document.body.scrollHeight),
      broken_images: Array.from(document.images).filter(function (i) { return !i.complete || i.naturalWidth === 0; })
                          .map(function (i) { return i.getAttribute("src"); }),
      tex_errors: Array.from(document.querySelectorAll(".katex-error")).map(function (e) { return e.textContent.slice(0, 80); }),
      roles: (text.match(/:(class|meth|func|mod|attr|data|exc):/g) || []).length,
      double_backticks: (text.match(/``/g) || []).length,
      unscrollable_wide_tables: wide
    };
    var pre = document.createElement("pre");
    pre.id = "docs-probe";
    pre.textContent = JSON.stringify(report);
    document.body.appendChild(pre);
  }, 300);
});
</script>
"""


def chromium() -> str:
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)  # type: ignore[return-value]
    sys.exit("no Chromium found: install it (Debian: apt-get install chromium) or set CHROMIUM=/path/to/binary")


def build(site: Path) -> None:
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)], cwd=ROOT, check=True)


def pages(site: Path) -> list[str]:
    """Every page of the built site, by name (``index``, ``api/mechanics``, ...)."""
    out = []
    for html in sorted(site.rglob("index.html")):
        rel = html.parent.relative_to(site)
        if rel.parts and rel.parts[0] in ("search", "css", "javascripts", "figures"):
            continue
        out.append("index" if not rel.parts else str(rel))
    return out


def page_file(site: Path, name: str) -> Path:
    return site / "index.html" if name == "index" else site / name / "index.html"


def _run(browser: str, args: list[str], timeout: int = 180) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        return subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              text=True, timeout=timeout, check=False)


def probe(browser: str, page: Path, width: int) -> dict:
    """The measurements of the page (see ``PROBE``), from the DOM Chromium dumps after rendering."""
    html = page.read_text(encoding="utf-8")
    probed = page.with_name("probe.html")
    probed.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    try:
        out = _run(browser, [f"--window-size={width},1000", "--virtual-time-budget=8000", "--dump-dom",
                             probed.as_uri()])
    finally:
        probed.unlink()
    m = re.search(r'<pre id="docs-probe">(.*?)</pre>', out.stdout, re.DOTALL)
    if not m:
        return {"error": "no measurement (the page did not finish loading)"}
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))


def shoot(browser: str, page: Path, png: Path, width: int, height: int) -> None:
    _run(browser, [f"--window-size={width},{height}", "--virtual-time-budget=8000", f"--screenshot={png}",
                   page.as_uri()])
    if not png.exists():
        sys.exit(f"Chromium did not write {png}")


def problems(report: dict) -> list[str]:
    out = []
    if "error" in report:
        out.append(report["error"])
        return out
    for key, what in (("broken_images", "broken images"), ("tex_errors", "TeX errors"),
                      ("unscrollable_wide_tables", "tables wider than the column")):
        if report.get(key):
            out.append(f"{what}: {report[key]}")
    if report.get("roles"):
        out.append(f"{report['roles']} literal Sphinx roles")
    if report.get("double_backticks"):
        out.append(f"{report['double_backticks']} literal double backticks")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pages", nargs="*", help="page names (default: every page)")
    ap.add_argument("--out", default=str(ROOT / "build" / "screenshots"), help="output directory")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--max-height", type=int, default=16000, help="screenshots are cut at this height (px)")
    ap.add_argument("--no-shots", action="store_true", help="only run the checks")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    browser = chromium()
    failed = {}
    with tempfile.TemporaryDirectory(prefix="site-") as tmp:
        site = Path(tmp) / "site"
        build(site)
        names = args.pages or pages(site)
        for name in names:
            page = page_file(site, name)
            if not page.exists():
                sys.exit(f"no page {name!r} in the built site ({page})")
            report = probe(browser, page, args.width)
            bad = problems(report)
            height = int(report.get("height", 4000))
            line = f"{name}: {height} px"
            if not args.no_shots:
                png = out / f"{name}.png"
                png.parent.mkdir(parents=True, exist_ok=True)  # api/mechanics -> <out>/api/
                shoot(browser, page, png, args.width, min(height, args.max_height))
                line += f" -> {png}" + (f" (cut at {args.max_height} px)" if height > args.max_height else "")
            print(line + ("" if not bad else "\n    " + "\n    ".join(bad)), flush=True)
            if bad:
                failed[name] = bad
    print(f"{len(names)} pages checked, {len(failed)} with problems" + (f": {sorted(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
