from django.contrib import admin

from .models import Comparison, EvalModel, Judgment, Response

admin.site.register(EvalModel, list_display=("name", "version", "family", "is_reference"))
admin.site.register(Response, list_display=("model", "instance", "turn", "condition"),
                    list_filter=("model", "condition"), raw_id_fields=("instance",))
admin.site.register(Comparison, list_display=("uuid", "instance", "swapped", "sampling"),
                    raw_id_fields=("instance", "response_a", "response_b"))


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    list_display = ("comparison", "source", "annotator", "choice", "score", "turn", "created_at")
    list_filter = ("source", "choice")
    raw_id_fields = ("comparison", "response", "worker", "assignment")
