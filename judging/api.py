"""REST API for analysts: models, leaderboards per judge and split, majority votes."""
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.db_text import storage_problem
from annotation.permissions import IsAnalyst

from .leaderboards import leaderboard_build
from .models import EvalModel
from .selectors import UnknownSplit, comparison_majorities, judge_names

_PARAMS = [OpenApiParameter("judge", str, description="'human' or an automatic judge's name"),
           OpenApiParameter("split", str, description="all, single, multi, overall, turn:N, "
                                                      "category:<name>"),
           OpenApiParameter("exclude_blocked", bool)]


class EvalModelSerializer(serializers.ModelSerializer):
    class Meta:
        model = EvalModel
        fields = ["name", "version", "family", "notes", "is_reference"]


class EvalModelViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsAnalyst]
    serializer_class = EvalModelSerializer
    lookup_field = "name"
    lookup_value_regex = r"[^/\x00]+"  # any name (e.g. "gpt-4.1") but NUL, which no column holds
    queryset = EvalModel.objects.order_by("name")


def _params(request) -> dict:
    params = {"judge": request.query_params.get("judge") or "human",
              "split": request.query_params.get("split") or "all",
              "exclude_blocked": request.query_params.get("exclude_blocked") in ("1", "true")}
    for name in ("judge", "split"):
        if (problem := storage_problem(params[name])) is not None:  # e.g. ?judge=%00
            raise ValidationError({name: [problem]})
    return params


class LeaderboardView(APIView):
    """Rating with CI, rank, matches and win rate vs reference (n) for one judge and split."""

    permission_classes = [IsAnalyst]

    @extend_schema(parameters=[*_PARAMS, OpenApiParameter("rounds", int)], responses=dict)
    def get(self, request):
        try:
            rounds = int(request.query_params.get("rounds", 1000))
        except ValueError:
            raise ValidationError({"rounds": ["must be an integer"]}) from None
        if not 0 <= rounds <= 10000:
            raise ValidationError({"rounds": ["must be within 0..10000"]})
        try:
            board = leaderboard_build(**_params(request), bootstrap_rounds=rounds)
        except UnknownSplit as exc:
            raise ValidationError({"split": [str(exc)]}) from exc
        return Response(board.as_dict())


class JudgesView(APIView):
    permission_classes = [IsAnalyst]

    @extend_schema(responses=dict)
    def get(self, request):
        return Response({"judges": judge_names()})


class MajoritiesView(APIView):
    """Each comparison's majority vote and agreement level (5/5, 4/5, 3/5)."""

    permission_classes = [IsAnalyst]

    @extend_schema(parameters=_PARAMS, responses=dict)
    def get(self, request):
        try:
            return Response({"comparisons": comparison_majorities(**_params(request))})
        except UnknownSplit as exc:
            raise ValidationError({"split": [str(exc)]}) from exc
