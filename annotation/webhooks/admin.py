"""Admin pages: endpoints (with a test ping) and the delivery log (read-only, retry now)."""
from django.contrib import admin

from annotation.webhooks.models import WebhookDelivery, WebhookEndpoint
from annotation.webhooks.services import delivery_retry_now, webhook_send_test


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    list_display = ("name", "url", "events", "secret_env", "active", "created_at")
    list_filter = ("active",)
    actions = ("send_ping",)

    @admin.action(description="Send a test ping")
    def send_ping(self, request, queryset):
        for endpoint in queryset:
            webhook_send_test(endpoint)
        self.message_user(request, f"Queued a ping to {queryset.count()} endpoint(s); "
                                   "see the delivery log for the outcome.")


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = ("event", "endpoint", "status", "attempts", "last_status_code",
                    "last_error", "next_attempt_at", "created_at", "delivered_at")
    list_filter = ("status", "event", "endpoint")
    readonly_fields = [f.name for f in WebhookDelivery._meta.fields]
    list_select_related = ("endpoint",)
    actions = ("retry_now",)

    def has_add_permission(self, request):
        return False  # deliveries come from events

    def has_change_permission(self, request, obj=None):
        return False

    @admin.action(description="Retry now")
    def retry_now(self, request, queryset):
        queued = sum(delivery_retry_now(d) for d in queryset)
        self.message_user(request, f"Queued {queued} delivery(ies) for another attempt.")
