"""REST API for analysts: models, leaderboards per judge and split (pairwise ratings and mean
scores), majority votes. Numbers are sent at full precision; rounding is for people. Boards
come from ``judging.rating_cache``, the same results the leaderboard page shows."""
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.core.db_text import storage_problem
from annotation.core.permissions import IsAdmin, IsAnalyst

from . import board_refresh, rating_cache
from .models import EvalModel
from .selectors import (
    HUMAN,
    UnknownSplit,
    comparison_majorities,
    judge_names,
    score_judge_names,
)
from .services.responses import reference_model_set
from .vote_aggregation import UnknownChoice, check_aggregation, check_both_bad

_PARAMS = [OpenApiParameter("judge", str, description="'human' or an automatic judge's name"),
           OpenApiParameter("split", str, description="all, single, multi, overall, turn:N, "
                                                      "category:<name>"),
           OpenApiParameter("exclude_blocked", bool),
           OpenApiParameter("include_trial", bool,
                            description="count the votes of trial batches (left out by default)")]
_COUNTING = [OpenApiParameter("aggregation", str,
                              description="majority (every vote a match, the default) or a "
                                          "reliability model (dawid-skene, mace: one verdict "
                                          "per comparison)"),
             OpenApiParameter("both_bad", str,
                              description="tie (the default: a 'both bad' vote is rated as a "
                                          "tie) or exclude")]


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

    def get_queryset(self):
        return super().get_queryset().in_study()  # the default study's (names are per study)

    @extend_schema(request=None, responses=EvalModelSerializer)
    @action(detail=True, methods=["post"], url_path="set-reference",
            permission_classes=[IsAdmin])
    def set_reference(self, request, name=None):
        """Make this model the reference that win rates are measured against (admins)."""
        model = self.get_object()  # 404 for an unknown name
        return Response(EvalModelSerializer(reference_model_set(model.name)).data)


def _params(request) -> dict:
    params = {"judge": request.query_params.get("judge") or HUMAN,
              "split": request.query_params.get("split") or "all",
              "exclude_blocked": request.query_params.get("exclude_blocked") in ("1", "true"),
              "include_trial": request.query_params.get("include_trial") in ("1", "true")}
    for name in ("judge", "split"):
        if (problem := storage_problem(params[name])) is not None:  # e.g. ?judge=%00
            raise ValidationError({name: [problem]})
    return params


def _rounds(request) -> int:
    try:
        rounds = int(request.query_params.get("rounds", 1000))
    except ValueError:
        raise ValidationError({"rounds": ["must be an integer"]}) from None
    if not 0 <= rounds <= 10000:
        raise ValidationError({"rounds": ["must be within 0..10000"]})
    return rounds


def _counting(request) -> dict:
    """How a pairwise board counts its votes (``judging.vote_aggregation``); unknown: a 400."""
    counting = {}
    for name, check in (("aggregation", check_aggregation), ("both_bad", check_both_bad)):
        try:
            counting[name] = check(request.query_params.get(name))
        except UnknownChoice as exc:
            raise ValidationError({name: [str(exc)]}) from exc
    return counting


class LeaderboardView(APIView):
    """Rating with CI, rank, matches and win rate vs reference (n) for one judge and split."""

    permission_classes = [IsAnalyst]

    @extend_schema(parameters=[*_PARAMS, *_COUNTING, OpenApiParameter("rounds", int)],
                   responses=dict)
    def get(self, request):
        return self.respond(request, rating_cache.leaderboard, **_counting(request))

    @board_refresh.tells_freshness
    def respond(self, request, build, **counting):
        rounds = _rounds(request)
        try:
            board = build(**_params(request), **counting, bootstrap_rounds=rounds)
        except UnknownSplit as exc:
            raise ValidationError({"split": [str(exc)]}) from exc
        return Response(board.as_dict())


class ScoreLeaderboardView(LeaderboardView):
    """Mean grade per model with bootstrap CI, rank and n for one source (humans or a grading
    judge) and split, with the source's declared scale and the range observed."""

    @extend_schema(parameters=[*_PARAMS, OpenApiParameter("rounds", int)], responses=dict)
    def get(self, request):
        return self.respond(request, rating_cache.score_leaderboard)


class JudgesView(APIView):
    permission_classes = [IsAnalyst]

    @extend_schema(responses=dict)
    def get(self, request):
        """Sources with pairwise verdicts (``judges``) and with grades (``score_judges``)."""
        return Response({"judges": judge_names(), "score_judges": score_judge_names()})


class MajoritiesView(APIView):
    """Each comparison's majority vote and agreement level (5/5, 4/5, 3/5)."""

    permission_classes = [IsAnalyst]

    @extend_schema(parameters=_PARAMS, responses=dict)
    def get(self, request):
        try:
            return Response({"comparisons": comparison_majorities(**_params(request))})
        except UnknownSplit as exc:
            raise ValidationError({"split": [str(exc)]}) from exc
