"""Submissions through the API: a submitter downloads the benchmark kit, posts a predictions
file (multipart) and polls its status. Same services and rules as the pages.

A study's submitters use ``/api/studies/<slug>/submissions/`` and ``…/kit/`` (a non-member gets
a 404); ``/api/eval/submissions/`` and ``/api/eval/kit/`` serve the default study."""
import json

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.core.permissions import IsKitReader, IsSubmitter
from studies.access import StudySubmitter
from studies.models import study_pk

from .models import Submission
from .services import SubmissionRefused, submission_create
from .views import kit_response


class SubmissionSerializer(serializers.ModelSerializer):
    model = serializers.CharField(source="model.name")
    status_label = serializers.CharField(source="get_status_display")
    units_done = serializers.SerializerMethodField()
    units_total = serializers.SerializerMethodField()

    class Meta:
        model = Submission
        fields = ["uuid", "name", "version", "model", "status", "status_label", "rows",
                  "responses", "unmatched", "estimated_cost", "units_done", "units_total",
                  "human_eval_requested", "created_at", "finished_at", "withdrawn_at"]

    def get_units_done(self, obj) -> int:
        return (obj.run.units_done + obj.run.units_failed) if obj.run else 0

    def get_units_total(self, obj) -> int:
        return obj.run.units_total if obj.run else 0


_UPLOAD = inline_serializer("SubmissionUpload", {
    "name": serializers.CharField(max_length=80), "file": serializers.FileField(),
    "human_eval": serializers.BooleanField(required=False)})


_STUDY = OpenApiParameter("study_slug", str, OpenApiParameter.PATH, description="the study")


def _my_submissions(request, study=None):
    """My submissions in the study (None: the default study), newest first."""
    mine = (Submission.objects.filter(submitter=request.user, study_id=study_pk(study))
            .select_related("model", "run"))
    return Response(SubmissionSerializer(mine[:100], many=True).data)


class SubmissionListCreate(APIView):
    permission_classes = [IsSubmitter]
    parser_classes = [MultiPartParser]

    @extend_schema(responses=SubmissionSerializer(many=True))
    def get(self, request):
        """My submissions to the default study, newest first."""
        return _my_submissions(request)

    @extend_schema(request=_UPLOAD, responses={201: SubmissionSerializer})
    def post(self, request):
        """Submit a predictions file for a new model version; 400 says why it was refused."""
        return self.create(request)

    def create(self, request, study=None):
        upload = request.FILES.get("file")
        if upload is None or not request.data.get("name"):
            raise ValidationError({"detail": "Give 'name' and 'file'."})
        if upload.size > settings.SUBMISSION_MAX_BYTES:  # before reading it into memory
            raise ValidationError({"detail": f"The file is larger than "
                                             f"{settings.SUBMISSION_MAX_BYTES:,} bytes."})
        try:
            submission = submission_create(
                submitter=request.user, name=str(request.data["name"]), file_name=upload.name,
                data=upload.read(), human_eval=str(request.data.get("human_eval", "")).lower()
                in ("1", "true", "on"), study=study)
        except SubmissionRefused as exc:
            raise ValidationError({"detail": " ".join(exc.messages)}) from exc
        return Response(SubmissionSerializer(submission).data, status=status.HTTP_201_CREATED)


class SubmissionDetail(APIView):
    permission_classes = [IsSubmitter]

    @extend_schema(responses=SubmissionSerializer)
    def get(self, request, submission_uuid):
        submission = (Submission.objects.select_related("model", "run")
                      .filter(uuid=submission_uuid, submitter=request.user,
                              study_id=study_pk(None)).first())
        if submission is None:
            raise NotFound("No such submission")
        return Response(SubmissionSerializer(submission).data)


class ZipRenderer(BaseRenderer):
    """Lets a client ask for ``Accept: application/zip``; the kit itself is a FileResponse,
    so this renders only refusals (as JSON text)."""
    media_type, format, charset = "application/zip", "zip", None

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return json.dumps(data).encode()


class KitDownload(APIView):
    permission_classes = [IsKitReader]
    renderer_classes = [JSONRenderer, ZipRenderer]

    @extend_schema(
        parameters=[OpenApiParameter("images", str, description="0: leave the image files out")],
        responses={(200, "application/zip"): OpenApiTypes.BINARY})
    def get(self, request):
        """The benchmark kit (zip): items with their item_id, instructions, turns, image URLs
        and stored image files, and a predictions template per accepted format."""
        return kit_response(request)


class StudySubmissionListCreate(SubmissionListCreate):
    permission_classes = [StudySubmitter]

    @extend_schema(parameters=[_STUDY], responses=SubmissionSerializer(many=True))
    def get(self, request, study_slug):
        """My submissions to the study, newest first."""
        return _my_submissions(request, request.study)

    @extend_schema(parameters=[_STUDY], request=_UPLOAD, responses={201: SubmissionSerializer})
    def post(self, request, study_slug):
        """Submit a predictions file for a new model version in the study (matched against
        its items, judged against its reference); 400 says why it was refused."""
        return self.create(request, request.study)


class StudyKitDownload(KitDownload):
    permission_classes = [StudySubmitter]

    @extend_schema(
        parameters=[_STUDY, OpenApiParameter("images", str,
                                             description="0: leave the image files out")],
        responses={(200, "application/zip"): OpenApiTypes.BINARY})
    def get(self, request, study_slug):
        """The study's benchmark kit (zip): its items with their item_id, instructions,
        turns, image URLs and stored image files, and a predictions template per format."""
        return kit_response(request, request.study)
