"""Admin for the judging tables; writes go through the services (no logic here)."""
from django.contrib import admin

from .models import Comparison, EvalModel, Judgment, Response

admin.site.register(EvalModel, list_display=("name", "version", "family", "is_reference"),
                    search_fields=("name",))
admin.site.register(Response, list_display=("model", "instance", "turn", "condition"),
                    list_filter=("model", "condition"), raw_id_fields=("instance",))


@admin.register(Comparison)
class ComparisonAdmin(admin.ModelAdmin):
    list_display = ("uuid", "instance", "response_a", "response_b", "swapped", "sampling",
                    "gold_choice")
    list_filter = ("sampling", "swapped")
    raw_id_fields = ("instance", "response_a", "response_b")


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    list_display = ("comparison", "response", "kind", "source", "annotator", "choice", "score",
                    "turn", "created_at")
    list_filter = ("kind", "source", "choice", "turn")
    search_fields = ("annotator",)
    raw_id_fields = ("comparison", "response", "worker", "assignment")
from .judges import admin as _judges_admin  # noqa: E402,F401
