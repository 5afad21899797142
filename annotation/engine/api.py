"""REST API: admins manage batches and read everything; annotators claim, read and submit
their own assignments only."""
from django.core.exceptions import ValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.exceptions import ValidationError as ApiValidationError
from rest_framework.generics import GenericAPIView, get_object_or_404  # bad uuid: 404 too
from rest_framework.response import Response

from annotation.core.money import AmountRefused
from annotation.core.permissions import IsAdmin, IsAnnotator
from annotation.engine.results import FORMATS, UnknownFormat, check_format, results_response
from annotation.engine.selectors import batch_progress
from annotation.engine.serializers import (
    AssignmentSerializer,
    BatchCreateSerializer,
    BatchSerializer,
    OwnAssignmentSerializer,
    ProgressSerializer,
    SubmitSerializer,
    TaskSerializer,
    WorkerSerializer,
)
from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.errors import AnswerInvalid, EngineError, NotEligible, TooFast
from annotation.engine.services.submissions import assignment_submit
from annotation.engine.services.workers import worker_for_user
from annotation.models import Assignment, Batch, Task, Worker
from studies.access import MANAGE
from studies.api import StudyScopedMixin


class BatchViewSet(StudyScopedMixin, viewsets.ReadOnlyModelViewSet):
    """Also under ``/api/studies/<slug>/batches/`` for the study's owners."""
    permission_classes = [IsAdmin]
    study_permission = MANAGE
    old_route_study = "all"  # /api/batches/ has always listed every batch
    serializer_class = BatchSerializer
    lookup_field = "uuid"
    queryset = Batch.objects.select_related("required_qualification").order_by("-created_at")

    @extend_schema(request=BatchCreateSerializer, responses=BatchSerializer)
    def create(self, request):
        incoming = BatchCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        try:
            in_study = {"study": self.study} if self.in_study else {}
            batch = batch_create_from_rows(**incoming.validated_data, **in_study)
        except AmountRefused as exc:
            raise ApiValidationError({exc.field: exc.messages}) from exc
        except (ValidationError, LookupError) as exc:
            raise ApiValidationError(
                {"rows": [str(m) for m in getattr(exc, "messages", [exc])]}
            ) from exc
        return Response(BatchSerializer(batch).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses=ProgressSerializer)
    @action(detail=True)
    def progress(self, request, uuid=None):
        return Response(ProgressSerializer(batch_progress(self.get_object())).data)

    @extend_schema(request=None, responses=BatchSerializer, parameters=[OpenApiParameter(
        "new_status", str, OpenApiParameter.PATH, enum=Batch.Status.values)])
    @action(detail=True, methods=["post"], url_path="status/(?P<new_status>[a-z]+)")
    def set_status(self, request, uuid=None, new_status=None):
        try:
            batch = batch_set_status(self.get_object(), new_status)
        except (ValidationError, KeyError) as exc:
            raise ApiValidationError({"status": [str(exc)]}) from exc
        return Response(BatchSerializer(batch).data)


RESULTS_SCHEMA = dict(
    responses={(200, FORMATS[f][0].split(";")[0]): OpenApiTypes.BINARY for f in FORMATS},
    parameters=[OpenApiParameter("fmt", str, OpenApiParameter.PATH, enum=list(FORMATS))])


class BatchResultsView(StudyScopedMixin, GenericAPIView):
    """``GET /api/batches/<uuid>/results.<csv|jsonl|parquet>``: the batch's results, one row
    per assignment (``annotation.engine.results``); also under ``/api/studies/<slug>/``."""

    permission_classes = [IsAdmin]
    queryset = Batch.objects.all()
    study_permission = MANAGE
    old_route_study = "all"

    def perform_content_negotiation(self, request, force=False):
        # The file's type is no renderer's: whatever the client accepts, errors are JSON.
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(operation_id="batches_results_retrieve", **RESULTS_SCHEMA)
    def get(self, request, uuid, fmt):
        batch = get_object_or_404(self.get_queryset(), uuid=uuid)
        try:
            check_format(fmt)
        except UnknownFormat as exc:
            raise ApiValidationError({"format": [str(exc)]}) from exc
        return results_response([batch], fmt)


class StudyBatchResultsView(BatchResultsView):
    """The same download under ``/api/studies/<slug>/`` (its own name in the schema)."""

    @extend_schema(operation_id="studies_batches_results_retrieve", **RESULTS_SCHEMA)
    def get(self, request, uuid, fmt):
        return super().get(request, uuid, fmt)


class TaskViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsAdmin]
    serializer_class = TaskSerializer
    lookup_field = "uuid"
    queryset = Task.objects.select_related("batch").order_by("batch_id", "position")


class WorkerViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsAdmin]
    serializer_class = WorkerSerializer
    lookup_field = "uuid"
    queryset = Worker.objects.order_by("id")


class AssignmentViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsAdmin]
    serializer_class = AssignmentSerializer
    lookup_field = "uuid"
    queryset = Assignment.objects.select_related("task", "batch", "worker").order_by("id")


class MyAssignmentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                          viewsets.GenericViewSet):
    """The requesting annotator's own assignments; anyone else's are simply not found."""

    permission_classes = [IsAnnotator]
    serializer_class = OwnAssignmentSerializer
    lookup_field = "uuid"
    queryset = Assignment.objects.none()  # for the schema only; get_queryset scopes to the user

    def get_queryset(self):
        worker = worker_for_user(self.request.user)
        return (Assignment.objects.filter(worker=worker)
                .select_related("task", "batch", "worker").order_by("id"))

    @extend_schema(request=None, responses={201: OwnAssignmentSerializer, 204: None})
    @action(detail=False, methods=["post"], url_path=r"claim/(?P<batch_uuid>[0-9a-f-]{36})")
    def claim(self, request, batch_uuid=None):
        batch = get_object_or_404(Batch, uuid=batch_uuid)
        try:
            assignment = task_claim_next(batch=batch, worker=worker_for_user(request.user))
        except NotEligible as exc:
            raise PermissionDenied(str(exc)) from exc
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(OwnAssignmentSerializer(assignment).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=SubmitSerializer, responses=OwnAssignmentSerializer)
    @action(detail=True, methods=["post"])
    def submit(self, request, uuid=None):
        assignment = self.get_object()  # 404 for someone else's, or a malformed uuid
        incoming = SubmitSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        try:
            outcome = assignment_submit(assignment=assignment,
                                        data=incoming.validated_data["answer"],
                                        telemetry=incoming.validated_data.get("telemetry"))
        except (AnswerInvalid, TooFast) as exc:
            raise ApiValidationError({"answer": [str(exc)]}) from exc
        except EngineError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        code = status.HTTP_200_OK if outcome.duplicate else status.HTTP_201_CREATED
        return Response(OwnAssignmentSerializer(outcome.assignment).data, status=code)
