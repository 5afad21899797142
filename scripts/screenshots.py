"""Screenshots of each role's pages for the README, taken in Chromium from a running demo.

Start a server with the demo loaded, then run this against it:

    DEBUG=1 .venv/bin/python manage.py load_demo
    DEBUG=1 .venv/bin/python manage.py runserver 127.0.0.1:8000 &
    .venv/bin/python scripts/screenshots.py --base-url http://127.0.0.1:8000

It logs in through the login form as ``anna``, ``analyst`` and ``admin`` and writes
``docs/screenshots/<name>.png`` at 1280×900 (the visible window, not the whole page). A PNG
over ``--max-kb`` is re-encoded with a 256-colour palette, which UI screenshots survive with
no visible loss, so the files stay small enough for git.

It needs only a server to talk to (no Django import): Playwright drives Debian's Chromium,
launched as ``tests/browser/conftest.py`` launches it.
"""
from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
from pathlib import Path

from PIL import Image
from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
# The flags of tests/browser/conftest.py: headless, no sandbox/GPU, nothing phoning home.
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync"]
VIEWPORT = {"width": 1280, "height": 900}


def log_in(page: Page, username: str, password: str) -> None:
    """Open "/", sign in on the form it sends us to, and wait for the role's home."""
    page.goto("/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button:has-text('Log in')")
    page.wait_for_load_state("networkidle")
    if "/accounts/login/" in page.url:
        sys.exit(f"could not log in as {username!r} (is the demo loaded? wrong password?)")


def settle(page: Page) -> None:
    """Wait until the page's images are decoded (plots are rendered by the server)."""
    page.wait_for_load_state("networkidle")
    page.wait_for_function("() => [...document.images].every((i) => i.complete || "
                           "i.loading === 'lazy')")  # a lazy image below the fold never loads


def shoot(page: Page, out: Path, name: str, max_kb: int) -> Path:
    settle(page)
    path = out / f"{name}.png"
    path.write_bytes(small_png(page.screenshot(), max_kb))
    print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: "
          f"{path.stat().st_size // 1024} KB  ({page.url})")
    return path


def small_png(data: bytes, max_kb: int) -> bytes:
    """``data`` as is when small enough, else palette-quantised and optimised."""
    if len(data) <= max_kb * 1024:
        return data
    image = Image.open(io.BytesIO(data)).convert("RGB")
    buffer = io.BytesIO()
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(buffer, "PNG", optimize=True)
    return min(data, buffer.getvalue(), key=len)


def annotator(page: Page, shot) -> None:
    shot("annotator-home")  # available work
    start = page.locator("a.start").first
    if start.count():
        start.click()  # a task (holds it for the lease; nothing is submitted)
        page.wait_for_selector("#hit-form")
        shot("annotator-task")
    page.click("nav >> text=My work")
    shot("annotator-my-work")


def analyst(page: Page, shot) -> None:
    shot("analyst-home")
    page.locator("#leaderboards a").first.click()
    shot("leaderboard")
    report = page_link(page, "/study/", "#reports li a")
    if report:
        page.goto(report)
        shot("report")
    review = page_link(page, "/study/", "#review-link")
    if review:
        page.goto(review)
        shot("review")


def admin(page: Page, shot) -> None:
    shot("admin-dashboard")
    page.goto("/batches/")
    shot("admin-batches")
    links = page.locator("#batch-table tbody td > a")  # newest first: the demo's first is last
    batch = links.last.get_attribute("href") if links.count() else None
    if batch:
        for name, suffix in (("admin-batch", ""), ("admin-review", "review/"),
                             ("admin-money", "money/")):
            page.goto(batch + suffix)
            shot(name)


def page_link(page: Page, start: str, selector: str) -> str | None:
    """The href of the first ``selector`` on ``start``, or None (the demo may lack it)."""
    page.goto(start)
    link = page.locator(selector).first
    return link.get_attribute("href") if link.count() else None


ROLES = (("anna", annotator), ("analyst", analyst), ("admin", admin))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--password", default="demo-password")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--max-kb", type=int, default=100)
    args = parser.parse_args(argv)
    if not os.path.exists(CHROMIUM):
        sys.exit(f"Chromium not found at {CHROMIUM} (set CHROMIUM_PATH)")
    args.out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            for username, walk in ROLES:
                context = browser.new_context(base_url=args.base_url, viewport=VIEWPORT)
                page = context.new_page()
                page.set_default_timeout(60_000)  # a cold leaderboard or report may take a while
                log_in(page, username, args.password)
                walk(page, lambda name, page=page: shoot(page, args.out, name, args.max_kb))
                context.close()
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
