"""Admin for submissions: withdraw (off the boards, nothing deleted) and approve the requested
human evaluation batch."""
from django.contrib import admin, messages

from .models import Submission
from .services import SubmissionRefused, submission_human_batch_create, submission_withdraw


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("name", "version", "submitter", "status", "responses", "estimated_cost",
                    "human_eval_requested", "human_batch", "created_at")
    list_filter = ("status", "human_eval_requested")
    search_fields = ("name", "submitter__username")
    readonly_fields = [f.name for f in Submission._meta.fields]
    list_select_related = ("submitter", "human_batch")
    actions = ("withdraw", "approve_human_eval")

    def has_add_permission(self, request):
        return False  # submissions come from submitters

    @admin.action(description="Withdraw (take off the leaderboards; nothing is deleted)")
    def withdraw(self, request, queryset):
        for submission in queryset:
            submission_withdraw(submission, reason=f"withdrawn by {request.user.get_username()}")
        self.message_user(request, f"Withdrew {queryset.count()} submission(s).")

    @admin.action(description="Approve the human evaluation (creates a draft batch)")
    def approve_human_eval(self, request, queryset):
        for submission in queryset:
            try:
                batch = submission_human_batch_create(submission)
            except SubmissionRefused as exc:
                self.message_user(request, f"{submission}: {' '.join(exc.messages)}",
                                  messages.WARNING)
            else:
                self.message_user(request, f"{submission}: draft batch “{batch.title}” with "
                                           f"{batch.tasks.count()} tasks; activate it to start.")
