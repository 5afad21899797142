"""``{% study_url 'console:batch' batch.uuid %}``: the page in the study being served
(``studies.links``), or the old URL outside one."""
from django import template

from studies.links import study_reverse

register = template.Library()


@register.simple_tag(takes_context=True)
def study_url(context, name, *args):
    return study_reverse(context.get("request"), name, *args)
