"""What the report's columns are called on the page and what each statistic means.

The CSVs and report.json keep their machine names (``wilson_low``, ``fleiss_kappa``); the HTML
shows the human header from here, with the definition as a tooltip. One mapping, so the analyst
page and the standalone report.html can never word a statistic differently. Column names built
from a prefix (``ties_excluded_accuracy``, ``longer_wins_n``, ``n:<source>``) are labelled from
their stem. Pure: no Django import.
"""
from __future__ import annotations

from ..metrics.registry import label as metric_label

# column -> (header, definition). A definition of "" means the header says it all.
COLUMNS: dict[str, tuple[str, str]] = {
    "source": ("Source", "Who gave the verdicts: the human majority, an automatic judge, or a "
                         "reference metric acting as a judge (higher score wins)"),
    "judge": ("Judge", ""),
    "judge_a": ("Judge A", ""),
    "judge_b": ("Judge B", ""),
    "model": ("Model", ""),
    "family": ("Family", "The model family the judge belongs to"),
    "category": ("Category", ""),
    "level": ("Human agreement", "How many of the human votes on an item agree with the "
                                 "majority (e.g. 4/5); 'all' pools every item"),
    "bin": ("Length bin", "Range of the length difference (tokens) between the two responses"),
    "hit_type": ("Task kind", "The HIT type the human votes came from"),
    "items": ("Items", "Items (comparison × turn) the statistic is computed on"),
    "n_items": ("Items", "Items (comparison × turn) both judges gave a verdict on"),
    "n": ("n", "Number of observations behind the estimate"),
    "correct": ("Agreeing", "Items where the source picks the same response as the human "
                            "majority"),
    "accuracy": ("Accuracy", "Share of items where the source picks the same response as the "
                             "human majority; unless ties are excluded, a judge's ties are "
                             "broken at random with the seed"),
    "wilson_low": ("95% CI low", "Lower end of the 95% Wilson score interval"),
    "wilson_high": ("95% CI high", "Upper end of the 95% Wilson score interval"),
    "cp_low": ("Exact CI low", "Lower end of the 95% Clopper–Pearson (exact binomial) interval"),
    "cp_high": ("Exact CI high", "Upper end of the 95% Clopper–Pearson interval"),
    "judge_ties": ("Judge ties", "Items the source called a tie (broken at random above)"),
    "no_majority": ("No majority", "Items with as many human votes for A as for B (left out)"),
    "error": ("Why not computed", ""),
    "note": ("Note", ""),
    "p_value": ("p (McNemar)", "Exact McNemar test that the two judges are equally accurate on "
                               "the items both judged; small p = a real difference"),
    "accuracy_a": ("Accuracy A", "Judge A's accuracy vs the human majority on the shared items"),
    "accuracy_b": ("Accuracy B", "Judge B's accuracy vs the human majority on the shared items"),
    "both_correct": ("Both agree", "Items where both judges agree with the human majority"),
    "both_wrong": ("Both disagree", "Items where neither judge agrees with the human majority"),
    "only_a_correct": ("Only A agrees", ""),
    "only_b_correct": ("Only B agrees", ""),
    "identities": ("Annotator identities", "Whether each vote's annotator is known (present), "
                                           "partly known, or missing (aggregated votes)"),
    "annotators": ("Annotators", "Identified annotators"),
    "votes": ("Votes", "Human votes (ties dropped)"),
    "anonymous_votes": ("Anonymous votes", "Votes without a known annotator"),
    "alpha_nominal": ("Krippendorff's α", "Krippendorff's alpha (nominal): agreement among "
                                          "annotators beyond chance; 1 = perfect, 0 = chance, "
                                          "handles missing votes; ≥ 0.667 is often required"),
    "alpha_score": ("Krippendorff's α", "Krippendorff's alpha on scores (ordinal or interval "
                                        "distance): agreement beyond chance"),
    "alpha_ci_low": ("α 95% CI low", "Percentile bootstrap over items"),
    "alpha_ci_high": ("α 95% CI high", "Percentile bootstrap over items"),
    "fleiss_kappa": ("Fleiss' κ", "Fleiss' kappa: agreement of many raters beyond chance, on "
                                  "items with the same number of votes; 1 = perfect, 0 = chance"),
    "fleiss_ci_low": ("κ 95% CI low", "Percentile bootstrap over items"),
    "fleiss_ci_high": ("κ 95% CI high", "Percentile bootstrap over items"),
    "fleiss_raters_per_item": ("Raters per item", "Fleiss' kappa needs the same number per "
                                                  "item: the most common number is used"),
    "fleiss_items": ("κ items", "Items with that number of votes"),
    "fleiss_items_excluded": ("κ items left out", "Items with another number of votes"),
    "annotator": ("Annotator", ""),
    "annotator_a": ("Annotator A", ""),
    "annotator_b": ("Annotator B", ""),
    "kappa": ("Cohen's κ", "Cohen's kappa: agreement of two annotators on their shared items, "
                           "beyond chance; 1 = perfect, 0 = chance"),
    "n_shared": ("Shared items", "Items both annotators voted on"),
    "observed_agreement": ("Observed agreement", "Share of shared items with the same vote"),
    "expected_agreement": ("Chance agreement", "Agreement expected from each annotator's "
                                               "vote frequencies alone"),
    "ci_low": ("95% CI low", "Lower end of the 95% interval (bootstrap)"),
    "ci_high": ("95% CI high", "Upper end of the 95% interval (bootstrap)"),
    "confidence": ("Confidence", "Confidence level of the interval"),
    "seed": ("Seed", "Random seed of the bootstrap and tie-breaking"),
    "n_boot": ("Bootstrap rounds", ""),
    "excluded_ties": ("Left out: ties", "Items where the others' majority was a tie"),
    "excluded_alone": ("Left out: alone", "Items nobody else voted on"),
    "aggregation": ("Human labels", "Plain majority, or a reliability model's weighted labels"),
    "reliability_model": ("Reliability model", "Dawid–Skene or MACE, fitted to every vote"),
    "n_votes": ("Votes", "Votes the estimate rests on"),
    "estimated_accuracy": ("Estimated accuracy", "Expected share of the annotator's votes "
                                                 "equal to the true label, under the model"),
    "estimate_low": ("95% interval low", "Jeffreys interval on the expected correct votes"),
    "estimate_high": ("95% interval high", "Jeffreys interval on the expected correct votes"),
    "pearson": ("Pearson r", "Linear correlation with the mean human score (−1 to 1)"),
    "pearson_p": ("p (Pearson)", "Two-sided p-value of Pearson's r"),
    "spearman": ("Spearman ρ", "Rank correlation with the humans (−1 to 1): do they order "
                               "things the same way?"),
    "spearman_p": ("p (Spearman)", "Two-sided p-value of Spearman's ρ"),
    "kendall_tau": ("Kendall τ", "Kendall's tau-b: share of concordant minus discordant "
                                 "pairs, ties corrected (−1 to 1)"),
    "kendall_p": ("p (Kendall)", "Two-sided p-value of Kendall's τ"),
    "models": ("Models", ""),
    "human_means": ("Human mean scores", "Per model, in the order of Models"),
    "judge_means": ("Judge mean scores", "Per model, in the order of Models"),
    "responses_per_model": ("Responses per model", ""),
    "rating": ("Rating", "Bradley–Terry rating on the Elo scale (match-weighted mean 1000)"),
    "rank": ("Rank", "Rank from the 95% CIs among the ranked models: a model ranks below "
                     "another only when their intervals do not overlap; none for a "
                     "provisional model"),
    "provisional": ("Provisional", "Fewer matches than LEADERBOARD_MIN_MATCHES: not ranked"),
    "ci_text": ("95% CI (shown)", "The interval within the span the ranked models' "
                                  "intervals cover; an end past it reads below / above"),
    "elo": ("Online Elo", "Elo updated judgment by judgment in time order (order-dependent)"),
    "matches": ("Matches", "Judgments involving the model"),
    "win_rate_vs_reference": ("Win rate vs reference", "Share of comparisons with the reference "
                                                       "model won (ties count half)"),
    "n_vs_reference": ("n vs reference", "Comparisons with the reference model"),
    "unbounded": ("Rating bound", "'never won' / 'never lost': every match went one way, so "
                                  "the Bradley–Terry rating has no finite value; the number "
                                  "shown only means below (above) everyone"),
    "win_rate": ("Win rate vs reference", "Share of comparisons with the reference won "
                                          "(ties count half)"),
    "verdicts": ("Verdicts", ""),
    "ties": ("Ties", ""),
    "first_rate_p": ("p (position)", "Binomial test that the first-shown response is chosen "
                                     "half the time"),
    "pairs_both_orders": ("Pairs judged in both orders", ""),
    "consistency": ("Consistency", "Share of pairs with the same verdict in both orders"),
    "consistency_n": ("Consistency n", ""),
    "equal_length": ("Equal length", "Pairs of the same length (left out)"),
    "judge_win_rate": ("Judge: own family wins", "How often the judge prefers its own family's "
                                                 "model"),
    "human_win_rate": ("Humans: that family wins", "How often the humans prefer it on the same "
                                                   "items"),
    "difference": ("Difference", "Judge minus human win rate: > 0 = self-preference"),
    "mcnemar_p": ("p (McNemar)", "Exact McNemar test of judge vs human on the same items"),
    "gap": ("Gap", "Automatic minus human win rate against the reference"),
    "n_human": ("n (humans)", ""),
    "n_judge": ("n (source)", ""),
}

# Prefixes of derived columns: prefix -> (header prefix, definition prefix).
PREFIXES: dict[str, tuple[str, str]] = {
    "ties_excluded_": ("Ties excluded: ", "Judge ties dropped instead of broken at random. "),
    "longer_wins_": ("Longer wins: ", "Verdicts preferring the longer response. "),
    "first_": ("First shown: ", "Verdicts preferring the response shown first. "),
}

# In a prefixed proportion (first shown, longer wins) "correct" and "accuracy" are a count and
# a rate of that event, not agreement with the humans.
EVENT_STEMS: dict[str, tuple[str, str]] = {
    "correct": ("count", "Verdicts where it happened"),
    "accuracy": ("rate", "Share of verdicts where it happened (50% = no bias)"),
}

# Shares in [0, 1], shown as percentages (the CSV and JSON keep the fraction).
PERCENT = {"accuracy", "wilson_low", "wilson_high", "cp_low", "cp_high", "accuracy_a",
           "accuracy_b", "observed_agreement", "expected_agreement", "win_rate_vs_reference",
           "win_rate", "consistency", "judge_win_rate", "human_win_rate", "confidence",
           "estimated_accuracy", "estimate_low", "estimate_high"}
DIFFERENCES = {"difference", "gap"}  # differences of shares: percentage points
P_VALUES = {"p_value", "pearson_p", "spearman_p", "kendall_p", "first_rate_p", "mcnemar_p"}
RATINGS = {"rating", "elo"}
# The column whose value is a row's sample size (first one present wins).
N_COLUMNS = ("n", "items", "n_items", "n_shared", "longer_wins_n", "first_n", "matches", "n_judge",
             "n_votes")
SMALL_N = 10

SECTION_INTROS: dict[str, str] = {
    "accuracy": "How often each automatic source picks the same response as the majority of the "
                "human votes, by how strongly the humans agreed.",
    "accuracy_by_aggregation": "The same accuracy against the plain majority (the default) "
                               "and against the human labels a reliability model weighs by "
                               "each annotator's estimated accuracy (Dawid–Skene, MACE).",
    "paired_tests": "Whether two judges' accuracies differ more than chance would explain.",
    "agreement": "Share of items on which two sources give the same verdict (n = shared items).",
    "reliability": "How much the human annotators agree with each other, beyond chance: the "
                   "ceiling any judge can be expected to reach.",
    "cohen_kappa": "Agreement of each pair of annotators who voted on enough of the same items.",
    "leave_one_out": "Each annotator against the majority of the others.",
    "worker_reliability": "Each annotator's accuracy as a reliability model estimates it from "
                          "every vote at once (Dawid–Skene: a confusion matrix per annotator; "
                          "MACE: a competence and a spamming pattern), with a Jeffreys "
                          "interval on the expected correct votes. Votes without an annotator "
                          "identity are pooled as one.",
    "score_correlation": "For graded responses: how each judge's (or metric's) score follows "
                         "the mean human score.",
    "ratings": "Bradley–Terry ratings of the models from each source's verdicts. A model that "
               "lost (or won) every one of its matches under a source has no finite rating: "
               "it is marked 'never won' ('never lost'), shown as — and not plotted. Under a "
               "reference metric this is typically the reference model itself, whose own text "
               "is scored against the instance's reference like any other response. A model "
               "with fewer matches than the board's minimum is provisional: listed, not "
               "ranked. The shown interval stays within the span the ranked models' "
               "intervals cover (the CSV keeps the full one).",
    "system_correlation": "Does each source rank the models the way the humans do?",
    "category_win_rates": "Per category, how often each model beats the reference.",
    "position_bias": "Whether the response shown first is preferred more than half the time.",
    "length_bias": "Whether the longer response is preferred.",
    "self_preference": "Whether a judge prefers models of its own family more than humans do.",
    "win_rate_gap": "Automatic minus human win rate against the reference, per model.",
}


def source_label(source: str) -> str:
    """'metric:bleu4' → 'BLEU-4 (metric)'; judges and 'human' keep their names."""
    if source.startswith("metric:"):
        name = source.removeprefix("metric:")
        return f"{metric_label(name)} (metric)"
    return source


def base_column(column: str) -> tuple[str, str, str]:
    """(stem, header prefix, definition prefix) of a possibly prefixed column name."""
    if column.startswith("n:"):
        return "n", "n: ", f"Items shared with {column[2:]}. "
    for prefix, (head, why) in PREFIXES.items():
        if column.startswith(prefix):
            return column[len(prefix):], head, why
    return column, "", ""


def column_label(column: str) -> tuple[str, str]:
    """(header, definition) of a report column; an unknown name is humanised, not hidden."""
    stem, head, why = base_column(column)
    if column.startswith("n:"):
        return f"n ({column[2:]})", why.strip()
    if head and head != PREFIXES["ties_excluded_"][0] and stem in EVENT_STEMS:
        header, definition = EVENT_STEMS[stem]
        return head + header, (why + definition).strip()
    if stem in COLUMNS:
        header, definition = COLUMNS[stem]
        return head + header, (why + definition).strip()
    if column in COLUMNS:
        return COLUMNS[column]
    return column.replace("_", " ").capitalize(), ""
