"""env.clone(): a snapshot of the full state, RNG included. For every game, a clone taken in
the middle of a seeded random episode and continued with the same actions gives the record the
original gives, and stepping a clone leaves the original untouched
(``socialgym_env.testing.check_clone``)."""
import pytest

import socialgym_env
from socialgym_env.testing import check_clone

GAMES = socialgym_env.game_ids()


@pytest.mark.parametrize("game_id", GAMES)
def test_clone_continued_with_the_same_actions_gives_the_same_record(game_id):
    check_clone(game_id)
