"""The admin module Django discovers: each room registers its own models' pages."""
from annotation.content import admin as _content_admin  # noqa: F401
from annotation.engine import admin as _engine_admin  # noqa: F401
from annotation.providers import admin as _providers_admin  # noqa: F401
from annotation.webhooks import admin as _webhooks_admin  # noqa: F401
