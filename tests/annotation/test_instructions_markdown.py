"""Batch instructions in Markdown on the worker's task page, through a real request: the
formatting and example images come out, and nothing a requester types can run in a worker's
browser (no raw HTML, no ``javascript:``/``data:`` link or image)."""
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from annotation.core.markdown import link_allowed, render_markdown
from tests.factories import make_batch

pytestmark = pytest.mark.django_db

ATTACKS = "\n\n".join([
    "<script>alert(1)</script>",
    '<img src="x" onerror="alert(1)">',
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](java&#x09;script:alert(1))",
    "[click](javascript%3Aalert(1))",
    "[click](<javascript:alert(1)>)",
    "<javascript:alert(1)>",
    "[ref]\n\n[ref]: javascript:alert(1)",
    "![pic](javascript:alert(1))",
    "![pic](data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=)",
    "[vb](vbscript:msgbox(1))",
])


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _tags(html: str) -> list[tuple[str, dict]]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


def _task_page(client, instructions: str) -> str:
    batch = make_batch(1, n=1, instructions=instructions)
    page = client.get(reverse("annotation:batch_next", args=[batch.uuid]), follow=True)
    assert page.status_code == 200
    html = page.content.decode()
    start = html.index('class="instructions"')
    return html[start:html.index("</details>", start)]


def test_markdown_instructions_show_formatting_and_example_images(alice_client):
    panel = _task_page(alice_client, "Pick the **better** answer.\n\n- read both\n- compare\n\n"
                                     "Example: ![a good answer](/static/img/example.png)\n\n"
                                     "[Guide](https://example.org/guide)")
    tags = _tags(panel)
    assert "<strong>better</strong>" in panel and "<li>read both</li>" in panel
    images = [attrs for tag, attrs in tags if tag == "img"]
    assert images == [{"src": "/static/img/example.png", "alt": "a good answer",
                       "loading": "lazy", "class": "example-image"}]
    links = [attrs for tag, attrs in tags if tag == "a"]
    assert links[0]["href"] == "https://example.org/guide"
    assert links[0]["target"] == "_blank" and "noopener" in links[0]["rel"]


def test_no_script_and_no_javascript_link_ever_comes_out(alice_client):
    panel = _task_page(alice_client, ATTACKS)
    assert "<script" not in panel.lower()
    for tag, attrs in _tags(panel):
        assert tag not in ("script", "iframe", "object", "embed", "svg"), tag
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            assert link_allowed(value or ""), (tag, name, value)
            assert "javascript" not in (value or "").lower() and "data:" not in (value or "")
    assert "&lt;script&gt;" in panel  # shown as text, so the requester sees the mistake


@pytest.mark.parametrize("url, allowed", [
    ("https://example.org/a.png", True), ("http://example.org", True), ("/static/a.png", True),
    ("guide.html#part", True), ("javascript:alert(1)", False), (" JAVASCRIPT:x", False),
    ("java\tscript:x", False), ("javascript%3Ax", False), ("data:image/png;base64,AA", False),
    ("mailto:a@b.c", False), ("file:///etc/passwd", False),
])
def test_only_http_and_relative_addresses_are_links(url, allowed):
    assert link_allowed(url) is allowed


def test_plain_text_instructions_keep_their_line_breaks():
    assert render_markdown("first line\nsecond line") == "<p>first line<br />\nsecond line</p>\n"
