"""Batch instructions written in Markdown, rendered for the worker's task page.

The text is the requester's, but a worker's browser runs whatever comes out, so the renderer is
closed: raw HTML is shown as text (never passed through), and a link or an image may only point
at http(s) or at a relative address (``javascript:``, ``data:``, ``vbscript:`` … become plain
text). Links open in a new tab so the worker does not lose the task. CommonMark plus tables and
strikethrough (markdown-it-py, the parser the Jupyter and MyST projects use); a single line break
stays a line break, as the plain-text instructions always showed it.
"""
import re
from urllib.parse import unquote

from markdown_it import MarkdownIt

ALLOWED_SCHEMES = ("http", "https")
_SCHEME = re.compile(r"^([a-z][a-z0-9+.\-]*):", re.IGNORECASE)
_INVISIBLE = re.compile(r"[\x00-\x20\x7f-\x9f]+")


def link_allowed(url: str) -> bool:
    """http(s) or relative; anything naming another scheme (even disguised with spaces,
    controls or percent-escapes that a browser would drop) is refused."""
    bare = _INVISIBLE.sub("", unquote(url or ""))
    match = _SCHEME.match(bare)
    return match is None or match.group(1).lower() in ALLOWED_SCHEMES


def _renderer() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False,
                                   "breaks": True})
    md.enable(["table", "strikethrough"])
    md.validateLink = link_allowed

    def link_open(renderer, tokens, idx, options, env):
        tokens[idx].attrSet("target", "_blank")
        tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
        return renderer.renderToken(tokens, idx, options, env)

    default_image = md.renderer.rules["image"]

    def image(renderer, tokens, idx, options, env):
        tokens[idx].attrSet("loading", "lazy")
        tokens[idx].attrSet("class", "example-image")
        return default_image(tokens, idx, options, env)

    md.add_render_rule("link_open", link_open)
    md.add_render_rule("image", image)
    return md


_MD = _renderer()


def render_markdown(text: str) -> str:
    """Safe HTML of ``text`` (the caller may mark it safe)."""
    return _MD.render(text or "")
