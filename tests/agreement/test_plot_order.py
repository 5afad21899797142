"""The report's plots draw their groups in one order whatever the hash seed: the accuracy plot's
agreement levels once followed a set's iteration order, so its bytes changed between runs."""
import itertools
import os
import subprocess
import sys

from agreement.reports.plots import level_order


def test_levels_from_most_agreement_with_equal_shares_by_more_votes():
    assert level_order({"3/5", "3/3", "5/5", "4/5", "2/3"}) == ["5/5", "3/3", "4/5", "2/3", "3/5"]


def test_every_input_order_gives_the_same_levels():
    levels = ["2/2", "3/3", "5/5", "4/5", "3/5", "2/3"]
    orders = {tuple(level_order(p)) for p in itertools.permutations(levels)}
    assert len(orders) == 1


def test_the_order_does_not_depend_on_the_hash_seed():
    """Two interpreters with different PYTHONHASHSEED build the level set the way the plot
    does (a set of strings, whose iteration order follows the seed)."""
    script = ("import django; django.setup();"
              "from agreement.reports.plots import level_order;"
              "print(level_order({'2/2', '3/3', '5/5', '4/4', '1/1', '4/5'}))")
    outputs = set()
    for seed in ("1", "2", "3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "DJANGO_SETTINGS_MODULE": "config.settings"}
        outputs.add(subprocess.run([sys.executable, "-c", script], env=env, check=True,
                                   capture_output=True, text=True).stdout)
    assert len(outputs) == 1
