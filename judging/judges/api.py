"""REST API for judge runs: analysts read runs and their progress; admins cancel and resume."""
from django.core.exceptions import ValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError as ApiValidationError
from rest_framework.response import Response

from annotation.core.permissions import IsAdmin, IsAnalyst
from studies.access import MANAGE
from studies.api import StudyScopedMixin

from .forms import JudgeRunForm
from .models import JudgeRun
from .selectors import run_progress
from .services import judge_run_cancel, judge_run_request, judge_run_resume


class JudgeRunProgressSerializer(serializers.Serializer):
    run = serializers.UUIDField()
    judge = serializers.CharField()
    kind = serializers.CharField()
    status = serializers.CharField()
    units_total = serializers.IntegerField()
    units_done = serializers.IntegerField()
    units_failed = serializers.IntegerField()
    percent = serializers.FloatField()
    calls_made = serializers.IntegerField()
    calls_cached = serializers.IntegerField()
    calls_failed = serializers.IntegerField()
    tokens_in = serializers.IntegerField()
    tokens_out = serializers.IntegerField()
    cost = serializers.DecimalField(max_digits=12, decimal_places=6)
    estimated_cost = serializers.DecimalField(max_digits=12, decimal_places=6)
    budget = serializers.DecimalField(max_digits=12, decimal_places=6, allow_null=True)
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class JudgeRunCreateSerializer(serializers.Serializer):
    """What the "new judge run" page asks (the same form validates both)."""
    judge = serializers.UUIDField(help_text="The judge's uuid")
    batch = serializers.UUIDField(required=False, allow_null=True,
                                  help_text="Only items a crowd batch showed")
    split = serializers.CharField(required=False, default="all",
                                  help_text="all, single, multi, conversation or category:<name>")
    source = serializers.CharField(required=False, allow_blank=True, default="")
    budget = serializers.DecimalField(max_digits=12, decimal_places=2, required=False,
                                      allow_null=True, help_text="USD; refused above it")


class JudgeRunViewSet(StudyScopedMixin, viewsets.ReadOnlyModelViewSet):
    """The default study's runs at ``/api/judges/runs/``; a study's under
    ``/api/studies/<slug>/judge-runs/`` (its analysts; its owners cancel and resume)."""
    permission_classes = [IsAnalyst]
    study_action_permissions = {"cancel": MANAGE, "resume": MANAGE}
    serializer_class = JudgeRunProgressSerializer
    lookup_field = "uuid"
    queryset = JudgeRun.objects.select_related("judge").order_by("-created_at")

    def list(self, request):
        page = self.paginate_queryset(self.get_queryset())
        rows = [run_progress(r) for r in (page if page is not None else self.get_queryset())]
        data = JudgeRunProgressSerializer(rows, many=True).data
        return self.get_paginated_response(data) if page is not None else Response(data)

    def retrieve(self, request, uuid=None):
        return Response(JudgeRunProgressSerializer(run_progress(self.get_object())).data)

    @extend_schema(request=JudgeRunCreateSerializer, responses={201: JudgeRunProgressSerializer})
    def create(self, request):
        """Price the selection, refuse it above the budget (400, nothing written), else start
        it: the web form's checks and service (``judge_run_request``)."""
        ser = JudgeRunCreateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        form = JudgeRunForm({key: "" if value is None else str(value)
                             for key, value in ser.validated_data.items()}, study=self.study)
        if not form.is_valid():
            raise ApiValidationError({key if key != "__all__" else "detail": errors
                                      for key, errors in form.errors.items()})
        data = form.cleaned_data
        try:
            run = judge_run_request(judge=data["judge"], item_uuids=data["items"],
                                    budget=data["budget"],
                                    created_by=request.user.get_username(),
                                    study=self.study)
        except ValidationError as exc:
            raise ApiValidationError({"detail": exc.messages}) from exc
        return Response(JudgeRunProgressSerializer(run_progress(run)).data,
                        status=status.HTTP_201_CREATED)

    @extend_schema(responses=JudgeRunProgressSerializer)
    @action(detail=True)
    def progress(self, request, uuid=None):
        return Response(JudgeRunProgressSerializer(run_progress(self.get_object())).data)

    @extend_schema(request=None, responses=JudgeRunProgressSerializer)
    @action(detail=True, methods=["post"], permission_classes=[IsAdmin])
    def cancel(self, request, uuid=None):
        return Response(JudgeRunProgressSerializer(run_progress(judge_run_cancel(self.get_object()))).data)

    @extend_schema(request=None, responses=JudgeRunProgressSerializer)
    @action(detail=True, methods=["post"], permission_classes=[IsAdmin])
    def resume(self, request, uuid=None):
        try:
            run = judge_run_resume(self.get_object())
        except ValidationError as exc:
            raise ApiValidationError({"status": exc.messages}) from exc
        return Response(JudgeRunProgressSerializer(run_progress(run)).data)
