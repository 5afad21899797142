"""REST API for analysts: agreement reports (list, detail with every number, create = queue),
the raw report.json, and metric runs (create = queue, detail = progress)."""
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.response import Response

from annotation.core.db_text import storage_problem
from annotation.core.permissions import IsAnalyst
from studies.api import StudyScopedMixin

from .models import MetricRun, Report
from .reports.params import AGGREGATIONS, MAJORITY
from .services.metric_scores import DEFAULT_METRICS, metric_run_start
from .services.reports import ReportBusy, report_delete, report_start


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


class ReportSerializer(serializers.ModelSerializer):
    files = serializers.SerializerMethodField()

    class Meta:
        model = Report
        fields = ["uuid", "title", "status", "stage", "progress", "params", "snapshot", "error",
                  "created_by", "created_at", "started_at", "finished_at", "files"]

    def get_files(self, obj) -> list[str]:
        return list(obj.files.values_list("name", flat=True))


class ReportDetailSerializer(ReportSerializer):
    class Meta(ReportSerializer.Meta):
        fields = [*ReportSerializer.Meta.fields, "data"]


class ReportCreateSerializer(serializers.Serializer):
    split = serializers.CharField(default="all", max_length=120)
    judges = serializers.ListField(child=serializers.CharField(max_length=100), required=False,
                                   allow_null=True, default=None)
    metrics = serializers.ListField(child=serializers.CharField(max_length=50),
                                    default=list(DEFAULT_METRICS))
    seed = serializers.IntegerField(default=0, min_value=0)
    bootstrap_rounds = serializers.IntegerField(default=1000, min_value=0, max_value=10_000)
    exclude_blocked = serializers.BooleanField(default=False)
    include_trial = serializers.BooleanField(
        default=False, help_text="count the votes of trial batches (left out by default)")
    aggregation = serializers.ChoiceField(
        choices=AGGREGATIONS, default=MAJORITY,
        help_text="human labels the headline accuracy is against (both are reported)")
    judge_families = serializers.DictField(child=serializers.CharField(), default=dict)
    title = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)


class ReportViewSet(StudyScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                    mixins.CreateModelMixin, mixins.DestroyModelMixin,
                    viewsets.GenericViewSet):
    """GET list / detail (detail includes ``data``, the full report.json); POST queues a new
    report and answers 202 with its uuid (an identical report already queued or running is
    answered instead; past the job caps 429 with Retry-After); GET ``…/json/`` returns
    report.json alone; DELETE removes a finished report and its files (409 while it builds)."""

    permission_classes = [IsAnalyst]
    lookup_field = "uuid"
    queryset = Report.objects.prefetch_related("files").order_by("-created_at")

    def get_serializer_class(self):
        if self.action == "create":
            return ReportCreateSerializer
        return ReportDetailSerializer if self.action == "retrieve" else ReportSerializer

    def get_queryset(self):
        qs = super().get_queryset()  # the study's (the old URL: the default study's)
        return qs if self.action == "retrieve" else qs.defer("data")

    @extend_schema(request=ReportCreateSerializer, responses={202: ReportSerializer})
    def create(self, request, *args, **kwargs):
        ser = ReportCreateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        params = dict(ser.validated_data)
        if (problem := storage_problem(params)) is not None:  # e.g. a NUL in a dict key
            raise ValidationError({"detail": problem})
        title = params.pop("title")
        try:
            report = report_start(params, title=title, created_by=request.user.get_username(),
                                  study=self.study)
        except ValueError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        report.refresh_from_db()
        return Response(ReportSerializer(report).data, status=status.HTTP_202_ACCEPTED)

    def perform_destroy(self, instance):
        try:
            report_delete(instance)
        except ReportBusy as exc:
            raise Conflict(str(exc)) from exc

    @extend_schema(responses=dict)
    @action(detail=True, methods=["get"], url_path="json")
    def json(self, request, uuid=None):
        report = self.get_object()  # 404 for a malformed uuid too
        if report.status != Report.Status.DONE:
            return Response({"status": report.status, "error": report.error},
                            status=status.HTTP_409_CONFLICT)
        return Response(report.data)


class MetricRunSerializer(serializers.ModelSerializer):
    class Meta:
        model = MetricRun
        fields = ["uuid", "metrics", "options", "status", "total", "done", "cached", "error",
                  "created_by", "created_at", "started_at", "finished_at"]
        read_only_fields = [f for f in fields if f not in ("metrics", "options")]


class MetricRunViewSet(StudyScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                       mixins.CreateModelMixin, viewsets.GenericViewSet):
    """POST {"metrics": [...], "options": {"seed": 0}} queues a batch run (202; an identical
    run already queued or running is answered instead; past the job caps 429 + Retry-After)."""

    permission_classes = [IsAnalyst]
    lookup_field = "uuid"
    serializer_class = MetricRunSerializer
    queryset = MetricRun.objects.order_by("-created_at")

    def create(self, request, *args, **kwargs):
        if not isinstance(request.data, dict):
            raise ValidationError({"detail": "the body must be a JSON object"})
        metrics = request.data.get("metrics") or list(DEFAULT_METRICS)
        options = request.data.get("options") or {}
        if (not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics)
                or not isinstance(options, dict)):
            raise ValidationError({"detail": "metrics must be a list of names, options an object"})
        if (problem := storage_problem(options)) is not None:
            raise ValidationError({"options": [problem]})
        try:
            run = metric_run_start(metrics, options=options, queue=True,
                                   created_by=request.user.get_username(), study=self.study)
        except (ValueError, TypeError, RuntimeError) as exc:  # TypeError: an option's type
            raise ValidationError({"detail": str(exc)}) from exc
        run.refresh_from_db()
        return Response(MetricRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)
