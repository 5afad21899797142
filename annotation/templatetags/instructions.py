"""``{% load instructions %}{{ batch.instructions|markdown }}``: a batch's instructions in
Markdown, rendered by the closed renderer of ``annotation.core.markdown``."""
from django import template
from django.utils.safestring import mark_safe

from annotation.core.markdown import render_markdown

register = template.Library()


@register.filter
def markdown(text) -> str:
    return mark_safe(render_markdown(str(text or "")))  # noqa: S308 - raw HTML is off, links checked
