"""The near-duplicate measure: character shingles and their Jaccard similarity (no database)."""
from annotation.core.shingles import jaccard, most_similar, shingles


def test_a_copy_with_other_case_punctuation_and_spacing_is_identical():
    a = shingles("The clock shows ten past two.")
    b = shingles("the  CLOCK shows ten-past two!")
    assert jaccard(a, b) == 1.0


def test_unrelated_sentences_share_almost_nothing():
    a = shingles("The clock shows ten past two in the afternoon.")
    b = shingles("Three red apples lie next to a yellow banana in a bowl.")
    assert jaccard(a, b) < 0.1


def test_a_lightly_edited_copy_scores_between_unrelated_and_identical():
    original = "The response names the correct bar but gives no values for any of the bars."
    edited = "The response names the correct bar but gives no numbers for any of the bars."
    assert 0.6 < jaccard(shingles(original), shingles(edited)) < 1.0


def test_empty_texts_duplicate_nothing_and_short_texts_are_one_shingle():
    assert shingles("  ...  ") == frozenset()
    assert jaccard(shingles(""), shingles("")) == 0.0
    assert shingles("Yes!") == frozenset(["yes"])
    assert jaccard(shingles("Yes!"), shingles("yes")) == 1.0


def test_most_similar_names_the_closest_text():
    score, where = most_similar("Apples and a banana.", ["A clock.", "apples, and a BANANA",
                                                         "Apples and a pear."])
    assert (score, where) == (1.0, 1)
    assert most_similar("Apples.", ["Clocks tick."]) == (0.0, None)
    assert most_similar("Apples.", []) == (0.0, None)


def test_only_the_start_of_a_long_text_is_compared():
    start = "A careful description of the whole scene with every object named. " * 20
    assert len(start) > 1000
    assert jaccard(shingles(start + "apples " * 300), shingles(start + "clocks " * 300)) == 1.0
