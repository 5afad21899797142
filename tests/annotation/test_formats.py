"""One format on the product's pages (``annotation.templatetags.formats``): money as currency,
moments with their time zone, HIT types by the registry's titles."""
from datetime import UTC, date, datetime
from decimal import Decimal

from django.template import Context, Template
from django.utils import timezone

from annotation.engine.hit_types import get_hit_type
from annotation.templatetags.formats import hit_type, money, money_title, when


def test_money_is_currency_rounded_to_cents():
    assert money(Decimal("0.272216")) == "$0.27"
    assert money("0.272216") == "$0.27"  # run progress carries strings
    assert money(1234.5) == "$1,234.50"
    assert money(Decimal("-0.5")) == "-$0.50"
    assert money(Decimal("-0.001")) == "$0.00"
    assert money(None) == money("") == money("n/a") == "—"
    assert money(Decimal("0.272216"), 4) == "$0.2722"
    assert money_title(Decimal("0.272216")) == "exactly $0.272216"
    assert money_title(Decimal("0.20")) == ""


def test_moments_carry_their_time_zone():
    moment = datetime(2026, 11, 26, 3, 42, 10, tzinfo=UTC)
    assert when(moment) == "2026-11-26 03:42 UTC"
    with timezone.override("Asia/Tokyo"):
        assert when(moment) == "2026-11-26 12:42 JST"
    assert when(date(2026, 1, 2)) == "2026-01-02"
    assert when(None) == "—"


def test_hit_types_by_their_titles_in_templates():
    title = get_hit_type("pairwise_ab").title
    assert hit_type("pairwise_ab") == title != "pairwise_ab"
    assert hit_type("not_a_type") == "not_a_type"
    html = Template("{% load formats %}{{ slug|hit_type }} · {{ cost|money }}").render(
        Context({"slug": "pairwise_ab", "cost": Decimal("0.05")}))
    assert html == f"{title} · $0.05"
