"""The API's documentation pages: Swagger UI and Redoc over the OpenAPI schema (``api/schema/``),
served offline (their assets come from drf-spectacular-sidecar through our static files) and
permitted like the schema itself (``SPECTACULAR_SETTINGS["SERVE_PERMISSIONS"]``).

Both render their UI with inline styles (Redoc's styled-components stops with an error without
them), so these two pages, and only these, allow inline styles; scripts stay ``'self'`` (the
Swagger UI's start-up script is served from its own URL by the split view) and nothing may be
loaded from another origin. Redoc's search runs in a worker made from a ``blob:`` URL.
"""
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerSplitView

DOCS_CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
            "script-src 'self'; worker-src 'self' blob:; form-action 'self'; "
            "frame-ancestors 'none'; base-uri 'none'")


class _DocsPolicy:
    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        response.headers["Content-Security-Policy"] = DOCS_CSP
        return response


class SwaggerPage(_DocsPolicy, SpectacularSwaggerSplitView):
    url_name = "api-schema"
    template_name = "api_docs/swagger_ui.html"


class RedocPage(_DocsPolicy, SpectacularRedocView):
    url_name = "api-schema"
    template_name = "api_docs/redoc.html"
