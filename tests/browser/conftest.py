"""Real Chromium (Debian's) driven by Playwright against Django's live server."""
import os
import shutil

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync"]


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"Chromium not found at {CHROMIUM}: run `make test` (it installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page_for(browser, live_server):
    """``page_for(user)`` → a Playwright page logged in as ``user`` (or anonymous for None);
    further keywords go to the browser context (``timezone_id="Asia/Tokyo"``)."""
    contexts = []

    def make(user=None, viewport=None, **options):
        from django.conf import settings
        from django.test import Client

        context = browser.new_context(base_url=live_server.url,
                                      viewport=viewport or {"width": 1280, "height": 900},
                                      **options)
        if user is not None:
            client = Client()
            client.force_login(user)
            cookie = client.cookies[settings.SESSION_COOKIE_NAME]
            context.add_cookies([{"name": cookie.key, "value": cookie.value,
                                  "url": live_server.url}])
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(10_000)
        return page

    yield make
    for context in contexts:
        context.close()
