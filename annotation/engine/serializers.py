"""API representations; public UUIDs only, never integer keys."""
from rest_framework import serializers

from annotation.models import Assignment, Batch, Task, Worker

MAX_SECONDS = 30 * 24 * 3600  # 30 days; the columns overflow past 2**31 - 1


class BatchSerializer(serializers.ModelSerializer):
    required_qualification = serializers.SlugRelatedField(slug_field="name", read_only=True,
                                                          allow_null=True)

    class Meta:
        model = Batch
        fields = ("uuid", "hit_type", "title", "description", "instructions",
                  "assignments_per_task", "reward", "budget", "lease_seconds", "min_seconds",
                  "hit_options", "required_qualification", "provider", "status", "trial",
                  "created_at")
        read_only_fields = fields


class BatchCreateSerializer(serializers.Serializer):
    hit_type = serializers.CharField()
    title = serializers.CharField(max_length=200)
    description = serializers.CharField(max_length=500, required=False, default="")
    instructions = serializers.CharField(required=False, default="")
    assignments_per_task = serializers.IntegerField(min_value=1, max_value=1000, default=5)
    reward = serializers.DecimalField(max_digits=8, decimal_places=2, min_value=0, default=0)
    lease_seconds = serializers.IntegerField(min_value=30, max_value=MAX_SECONDS, default=1800)
    min_seconds = serializers.IntegerField(
        min_value=0, max_value=MAX_SECONDS, required=False, allow_null=True, default=None,
        help_text="Answers faster than this are refused. Missing: the HIT type's default (a "
                  "share of its expected time); 0 accepts any speed.")
    hit_options = serializers.JSONField(
        required=False, default=dict,
        help_text='The HIT type\'s per-batch settings, e.g. {"answers": "ab_tie", "strength": '
                  'true} for a pairwise batch that offers ties and asks how much better.')
    trial = serializers.BooleanField(
        default=False, help_text="its votes count on no leaderboard or report unless an "
                                 "analyst includes trial batches")
    rows = serializers.ListField(child=serializers.DictField(), allow_empty=False)


class ProgressSerializer(serializers.Serializer):
    tasks = serializers.IntegerField()
    slots = serializers.IntegerField()
    done = serializers.IntegerField()
    leased = serializers.IntegerField()
    remaining = serializers.IntegerField()
    late_uncounted = serializers.IntegerField()


class TaskSerializer(serializers.ModelSerializer):
    batch = serializers.UUIDField(source="batch.uuid", read_only=True)

    class Meta:
        model = Task
        fields = ("uuid", "batch", "position", "payload", "is_gold", "max_assignments",
                  "slots_taken")
        read_only_fields = fields


class WorkerSerializer(serializers.ModelSerializer):
    class Meta:
        model = Worker
        fields = ("uuid", "provider", "external_id", "blocked", "blocked_reason", "created_at")
        read_only_fields = fields


class AssignmentSerializer(serializers.ModelSerializer):
    task = serializers.UUIDField(source="task.uuid", read_only=True)
    batch = serializers.UUIDField(source="batch.uuid", read_only=True)
    worker = serializers.UUIDField(source="worker.uuid", read_only=True)
    payload = serializers.JSONField(source="task.payload", read_only=True)

    class Meta:
        model = Assignment
        fields = ("uuid", "task", "batch", "worker", "status", "claimed_at", "expires_at",
                  "submitted_at", "answer", "seconds_spent", "counted", "late", "gold_correct",
                  "hit_type_version", "payload", "telemetry", "flags")
        read_only_fields = fields


class OwnAssignmentSerializer(AssignmentSerializer):
    """What an annotator sees of their own assignment: never whether a task was gold or how
    they did on it (workers who learn which tasks are checks game them)."""

    class Meta(AssignmentSerializer.Meta):
        fields = tuple(f for f in AssignmentSerializer.Meta.fields
                       if f not in ("gold_correct", "telemetry", "flags"))
        read_only_fields = fields


class SubmitSerializer(serializers.Serializer):
    answer = serializers.DictField()
    telemetry = serializers.JSONField(
        required=False, help_text="What the client measured (active_ms, blurs, pastes, "
        "pasted_chars, keystrokes: whole numbers); unknown or bad values are ignored")
