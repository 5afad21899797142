"""The API docs in Chromium: Swagger UI and Redoc render the schema's operations under the
site's policy, with nothing fetched from another origin and no script error.

Redoc's bundle hard-codes one outside image (its footer logo on cdn.redoc.ly); the pages'
Content-Security-Policy (``config.api_docs``) refuses it before any request leaves, and Redoc
hides the broken image."""
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("path,rendered", [
    ("/api/docs/", ".opblock"),  # Swagger UI: one block per operation
    ("/api/redoc/", "h2:has-text(\"agreement_metric_runs_list\")"),  # Redoc: an operation
])
def test_the_docs_render_offline(page_for, analyst, live_server, path, rendered):
    page = page_for(analyst)
    errors, fetched, refused = [], [], []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("response", lambda r: fetched.append(r.url))
    page.on("requestfailed", lambda r: refused.append((r.url, r.failure)))
    page.goto(path)
    page.locator(rendered).first.wait_for(timeout=30_000)  # the schema is built on first use
    assert page.locator(rendered).count() >= 1
    ours = (live_server.url, f"blob:{live_server.url}")
    assert [u for u in fetched if not u.startswith(ours)] == []
    assert all(failure == "csp" for _, failure in refused), refused  # refused by the policy
    assert errors == []
