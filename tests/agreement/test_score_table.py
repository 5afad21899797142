"""A metric's scores held as arrays read exactly like the dict they replace."""
import numpy as np
import pytest

from agreement.score_table import ScoreTable


def test_a_table_reads_like_its_dict_to_the_bit():
    scores = {3: 0.1 + 0.2, 7: 1 / 3, 8: -0.0, 12: 5e-324}
    table = ScoreTable(np.array(list(scores), np.int64), np.array(list(scores.values())))
    assert table == scores and list(table) == [3, 7, 8, 12] and len(table) == 4
    assert all(type(table[k]) is float and table[k].hex() == v.hex() for k, v in scores.items())
    assert 4 not in table and 99 not in table and -1 not in table and "3" not in table
    assert np.int64(7) in table and table.get(5, "none") == "none"
    with pytest.raises(KeyError):
        table[13]  # noqa: B018


def test_sparse_ids_are_left_to_a_dict():
    assert ScoreTable.fits(np.arange(1000, dtype=np.int64))
    assert not ScoreTable.fits(np.array([1, 10_000_000], np.int64))
    assert ScoreTable.fits(np.array([], np.int64))


def test_looking_up_many_ids_at_once_reads_like_one_at_a_time():
    scores = {3: 0.1 + 0.2, 7: 1 / 3, 8: -0.0, 12: 5e-324}
    table = ScoreTable(np.array(list(scores), np.int64), np.array(list(scores.values())))
    ids = [3, 4, -1, 8, 12, 13, 10**12, 7, 3]
    has, values = table.lookup(np.array(ids, np.int64))
    assert has.tolist() == [i in table for i in ids]
    assert [v.hex() for v, h in zip(values.tolist(), has, strict=True) if h] == [
        table[i].hex() for i in ids if i in table]

    empty = ScoreTable(np.array([], np.int64), np.array([]))
    has, values = empty.lookup(np.array([0, 3], np.int64))
    assert not has.any() and values.tolist() == [0.0, 0.0]
