"""Content-Security-Policy on every response.

Pages allow only our own scripts and styles; images may come from anywhere over https (benchmark
images are often remote). Task pages opt in to being framed by the marketplaces with the
``frame_ancestors_allowed`` attribute; everything else keeps ``frame-ancestors 'none'``. Forms
post to us or to a marketplace's ``submit_hosts`` (the registry's).
"""
from django.conf import settings

from annotation.core.marketplaces import submit_hosts


def allow_marketplace_framing(response):
    """Mark a task-page response as frameable by the marketplaces (and only by them)."""
    response.frame_ancestors_allowed = True
    response.xframe_options_exempt = True
    return response


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if getattr(response, "frame_ancestors_allowed", False):
            ancestors = " ".join(["'self'", *settings.TASK_FRAME_ANCESTORS])
            response.headers.pop("X-Frame-Options", None)
        else:
            ancestors = "'none'"
        form_action = " ".join(["'self'", *submit_hosts()])
        response.headers.setdefault(
            "Content-Security-Policy",
            "default-src 'self'; img-src 'self' https: http: data:; style-src 'self'; "
            f"script-src 'self'; form-action {form_action}; frame-ancestors {ancestors}; "
            "base-uri 'none'",
        )
        return response
