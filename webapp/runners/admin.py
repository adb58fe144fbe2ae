from django.contrib import admin, messages

from .models import Job, RegistrationToken, Runner, digest
from .services import cancel

@admin.register(RegistrationToken)
class RegistrationTokenAdmin(admin.ModelAdmin):
    list_display = ("__str__", "note", "created", "expires_at", "uses_left", "revoked", "last_used")
    list_filter = ("revoked",)
    fields = ("note", "uses_left", "expires_at", "revoked", "created", "last_used")
    readonly_fields = ("created", "last_used")
    actions = ["revoke"]

    def save_model(self, request, obj, form, change):
        if not change:
            raw = RegistrationToken.new_raw()
            obj.token_hash = digest(raw)
            super().save_model(request, obj, form, change)
            messages.warning(request, f"Registration token (shown only now): {raw}")
            return
        super().save_model(request, obj, form, change)

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset):
        queryset.update(revoked=True)

@admin.register(Runner)
class RunnerAdmin(admin.ModelAdmin):
    list_display = ("name", "status", "labels", "queue", "last_heartbeat", "current_job_id", "enabled")
    list_filter = ("enabled",)
    readonly_fields = ("secret_hash", "queue", "hardware", "sandbox", "registered", "last_heartbeat",
                       "current_job_id", "token")
    actions = ["disable"]

    @admin.action(description="Disable the selected runners (refused from now on)")
    def disable(self, request, queryset):
        queryset.update(enabled=False)

@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "kernel", "state", "runner", "requested_runner", "attempts", "created", "finished")
    list_filter = ("state",)
    search_fields = ("kernel", "session_id")
    readonly_fields = ("created", "started", "finished", "heartbeat", "dispatched", "events", "result")
    actions = ["cancel_jobs"]

    @admin.action(description="Cancel the selected jobs")
    def cancel_jobs(self, request, queryset):
        for job in queryset:
            cancel(job)
