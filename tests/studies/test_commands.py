"""``--study``: the only study by default; with several, a CommandError listing them."""
import json

import pytest
from django.core.management import CommandError, call_command

from studies.models import default_study_id
from tests.studies import builders

pytestmark = pytest.mark.django_db


def _ratings(capsys, *args):
    call_command("ratings", "--format", "json", "--rounds", "10", *args)
    return json.loads(capsys.readouterr().out)


def test_the_only_study_is_the_default(capsys):
    ms = builders.models(default_study_id(), "a", "b")
    builders.voted(default_study_id(), [(ms["a"], ms["b"], ["A", "A", "B"])])
    assert {r["model"] for r in _ratings(capsys)["rows"]} == {"a", "b"}


def test_with_several_studies_one_must_be_named(capsys):
    other = builders.study("zeta-bench")
    ms = builders.models(other, "c", "d")
    builders.voted(other, [(ms["c"], ms["d"], ["A", "B", "B"])])
    with pytest.raises(CommandError, match="zeta-bench") as refused:
        _ratings(capsys)
    assert "--study" in str(refused.value) and "default" in str(refused.value)
    assert {r["model"] for r in _ratings(capsys, "--study", "zeta-bench")["rows"]} == {"c", "d"}
    assert _ratings(capsys, "--study", "default")["rows"] == []
    with pytest.raises(CommandError, match="No study 'nope'"):
        _ratings(capsys, "--study", "nope")


def test_a_report_is_built_for_the_study_named(tmp_path, capsys):
    other = builders.study("zeta-bench")
    ms = builders.models(other, "c", "d")
    builders.voted(other, [(ms["c"], ms["d"], ["A", "B", "B"])])
    call_command("agreement_report", "--out", str(tmp_path), "--metrics", "", "--bootstrap",
                 "10", "--study", "zeta-bench")
    assert "3 judgments" in capsys.readouterr().out
    from agreement.models import Report
    assert Report.objects.get().study_id == other.pk
