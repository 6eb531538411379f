"""Regenerate docs/report.png, the README's picture of the HTML report, from the real report of the
sample session, drawn by headless Chromium::

    python docs/make_report_png.py            # writes docs/report.png
    python docs/make_report_png.py out.png    # elsewhere

Needs playwright (the test extra) and Chromium (Debian's package ``chromium``). The sample is priced as
samples/tokprof.toml prices it, so that "What to change" shows what the report shows a user with prices.
The picture is the top of the page, 1200 pixels wide, as a reader first sees it.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tokprof.frontends.cli import main  # noqa: E402

SAMPLE = ROOT / "samples" / "incident_session.json"
#: samples/tokprof.toml's price of the sample's model (US dollars per million input and output tokens).
PRICE = "Qwen/Qwen2.5-7B-Instruct=0.30/0.30"
WIDTH, HEIGHT = 1200, 1500


def make(target: Path) -> Path:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("needs Chromium (Debian package chromium)")
    with tempfile.TemporaryDirectory() as folder:
        page_file = Path(folder) / "report.html"
        sample = str(SAMPLE.relative_to(ROOT))  # the path the page shows: as a reader in a checkout gives it
        code = main(["report", sample, "--price", PRICE, "-o", str(page_file), "--no-progress"])
        if code != 0:
            sys.exit(f"tokprof report failed ({code})")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
            try:
                page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT}, color_scheme="light")
                page.goto(page_file.as_uri())
                page.wait_for_function("document.documentElement.hasAttribute('data-charts-rendered')", timeout=60000)
                page.screenshot(path=str(target), clip={"x": 0, "y": 0, "width": WIDTH, "height": HEIGHT})
            finally:
                browser.close()
    return target


if __name__ == "__main__":
    out = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT / "docs" / "report.png"
    os.chdir(ROOT)
    print(f"wrote {make(out)}")
