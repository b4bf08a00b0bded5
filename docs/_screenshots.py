"""Build the documentation site, serve it locally and take headless Chromium screenshots of it.

    python docs/_screenshots.py [--out DIR] [--width 1440] [--height 2000] [--no-build]

Takes the front page, an API page (Isotropy) and an experiment page (classifier-geometry) by
default, or the site paths given with ``--page``. Needs Debian's ``chromium`` package (or
``google-chrome``/``chromium-browser`` on the PATH, or ``$CHROMIUM``) and the ``docs`` extra.
The server binds to 127.0.0.1 on a free port and stops when the script ends.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGES = {"front": "", "api-isotropy": "api/isotropy/", "experiment-classifier-geometry": "experiments/classifier-geometry/"}
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def find_browser() -> str:
    candidates = [os.environ["CHROMIUM"]] if os.environ.get("CHROMIUM") else []
    candidates += [found for name in BROWSERS if (found := shutil.which(name))]
    if not candidates:
        raise SystemExit("Error: no Chromium found; expected the 'chromium' package "
                         "(apt-get install -y chromium) or $CHROMIUM naming the browser.")
    return candidates[0]


def build_site(site_dir: Path) -> None:
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
                   cwd=REPO, check=True)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


def serve(site_dir: Path) -> http.server.ThreadingHTTPServer:
    handler = functools.partial(_QuietHandler, directory=str(site_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def screenshot(browser: str, url: str, out: Path, *, width: int, height: int) -> None:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                   "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}",
                   f"--window-size={width},{height}", f"--screenshot={out}", url]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if result.returncode != 0 or not out.is_file():
        raise SystemExit(f"Error: Chromium could not capture {url}: {result.stderr.strip()[-500:]}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "site-screenshots", help="where the PNG files go")
    parser.add_argument("--width", type=int, default=1440)
    parser.add_argument("--height", type=int, default=2000)
    parser.add_argument("--page", action="append", default=None, metavar="PATH",
                        help="a site path such as api/cluster/ (repeatable); default: front, API and experiment pages")
    parser.add_argument("--no-build", action="store_true", help="serve the existing site/ instead of building")
    args = parser.parse_args(argv)

    browser = find_browser()
    pages = {p.strip("/").replace("/", "-") or "front": p for p in args.page} if args.page else PAGES
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="isotropy-site-") as tmp:
        site_dir = REPO / "site" if args.no_build else Path(tmp)
        if not args.no_build:
            build_site(site_dir)
        server = serve(site_dir)
        try:
            base = f"http://127.0.0.1:{server.server_address[1]}/"
            for name, path in pages.items():
                with urllib.request.urlopen(base + path, timeout=30) as response:  # the page is served
                    if response.status != 200:
                        raise SystemExit(f"Error: {base + path} answered HTTP {response.status}")
                out = args.out / f"{name}.png"
                screenshot(browser, base + path, out, width=args.width, height=args.height)
                print(out)
        finally:
            server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
