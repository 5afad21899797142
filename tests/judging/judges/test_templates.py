"""Prompt templates: every shipped file parses, follows the papers' output conventions, and
overrides get their own version; a missing value is an error, texts are never re-scanned."""
import pytest

from judging.judges.templates import (
    TemplateError,
    load_template,
    parse_template,
    shipped_names,
    shipped_template,
)


def test_every_shipped_template_parses_with_a_version():
    names = shipped_names()
    assert {"pairwise_reference_free", "pairwise_reference_backed", "pairwise_vlm",
            "multiturn_turn", "multiturn_overall", "rubric_absolute", "direct_grade",
            "direct_turn", "direct_overall", "extract_verdict", "extract_rating"} <= set(names)
    for name in names:
        template = shipped_template(name)
        assert template.version == f"{name}@v1" and template.messages[-1][0] == "user"


@pytest.mark.parametrize("name, convention", [
    ("pairwise_reference_free", '"Overall, Response X is better."'),
    ("multiturn_overall", '"Overall, Response X is better."'),
    ("rubric_absolute", "[RESULT] (an integer number between 1 and 5)"),
    ("direct_grade", '"Rating: X"'),
    ("extract_verdict", '"Final Answer: X"'),
])
def test_output_conventions_of_the_papers(name, convention):
    text = "\n".join(t for _, t in shipped_template(name).messages)
    assert convention in text


def test_extraction_prompt_carries_two_worked_examples():
    roles = [role for role, _ in shipped_template("extract_verdict").messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]


def test_render_fills_placeholders_once_and_rejects_missing_values():
    template = parse_template("t", "version: 3\n=== user ===\nA {{ x }} B {{y}} {5}")
    assert template.version == "t@v3"
    rendered = template.render(x="{{ y }}", y="Rating:{7}")
    assert rendered == [{"role": "user", "content": "A {{ y }} B Rating:{7} {5}"}]
    with pytest.raises(TemplateError, match="no value for \\['y'\\]"):
        template.render(x="1")


def test_override_wins_and_is_versioned_by_its_content():
    a = load_template("direct_grade", {"direct_grade": "=== user ===\nGrade {{ response }}"})
    b = load_template("direct_grade", {"direct_grade": "=== user ===\nRate {{ response }}"})
    assert a.version.startswith("direct_grade@override-") and a.version != b.version
    assert load_template("direct_grade", {}).version == "direct_grade@v1"
    with pytest.raises(TemplateError):
        parse_template("bad", "no sections here")
