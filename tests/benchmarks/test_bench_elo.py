"""Bradley–Terry fit, pair extraction, bootstrap and Wilson intervals (socialgym_benchmarks.ratings)."""

import numpy as np
import pytest

from socialgym_benchmarks import ratings as bt
from socialgym_benchmarks.ratings import bootstrap
from socialgym_benchmarks.perf.elo_fit import sklearn_aggregated_fit


def rec(policies, rewards, teams=None, **extra):
    roster = [{"agent": f"player_{i}", "policy": p, "team": (teams[i] if teams else ""), "role": "player"}
              for i, p in enumerate(policies)]
    record = {"episode_id": extra.pop("episode_id", "e"), "game": "g", "finished": True, "roster": roster,
              "rewards": {f"player_{i}": float(r) for i, r in enumerate(rewards)},
              "scores": {f"player_{i}": float(r) for i, r in enumerate(extra.pop("scores", rewards))}}
    record.update(extra)
    return record


# ----------------------------------------------------------------------------- pairs
def test_ffa_pairs_every_cross_policy_pair():
    assert sorted(bt.episode_pairs(rec(["A", "B", "C"], [1, 0, -1]))) == [("A", "B"), ("A", "C"), ("B", "C")]


def test_same_policy_pairs_skipped_and_same_score_left_out():
    # A vs A skipped; A(+1) beats B(0); B(0) beats the other A(-1)
    assert sorted(bt.episode_pairs(rec(["A", "A", "B"], [1, -1, 0]))) == [("A", "B"), ("B", "A")]
    assert bt.episode_pairs(rec(["A", "B"], [1, 1])) == []            # same score: no outcome
    assert bt.episode_pairs(rec(["A", "B", "C"], [1, 1, -1])) == [("A", "C"), ("B", "C")]


def test_team_games_only_cross_team_pairs():
    r = rec(["A", "B", "C", "C"], [1, 1, -1, -1], teams=["x", "x", "y", "y"])
    # A and B are team mates (different policies) and are not compared
    assert sorted(bt.episode_pairs(r)) == [("A", "C"), ("A", "C"), ("B", "C"), ("B", "C")]
    r = rec(["A", "A", "B", "B"], [-1, -1, 1, 1], teams=["x", "x", "y", "y"])
    assert bt.episode_pairs(r) == [("B", "A")] * 4


def test_failed_or_unfinished_records_give_no_pairs_and_score_compare():
    assert bt.episode_pairs(rec(["A", "B"], [1, -1], failed=True)) == []
    assert bt.episode_pairs(rec(["A", "B"], [1, -1], finished=False)) == []
    r = rec(["A", "B"], [0, 0], scores=[7, 3])
    assert bt.episode_pairs(r) == [] and bt.episode_pairs(r, compare="score") == [("A", "B")]


def test_role_labels():
    r = rec(["A", "B", "B"], [1, -1, -1], teams=["spies", "town", "town"])
    label = lambda s: f"{s['policy']}|{'alt' if s['team'] == 'spies' else 'main'}"
    assert bt.episode_pairs(r, label) == [("A|alt", "B|main")] * 2


# ----------------------------------------------------------------------------- fit
def sklearn_elo(wins):
    return sklearn_aggregated_fit(wins, tol=1e-12)


@pytest.mark.parametrize("k,seed", [(2, 0), (3, 1), (5, 2), (8, 3)])
def test_fit_matches_sklearn_within_half_elo(k, seed):
    rng = np.random.default_rng(seed)
    wins = rng.integers(0, 40, size=(k, k)).astype(float)
    np.fill_diagonal(wins, 0)
    if k > 2:
        wins[0, 1:] = 0                   # player 0 never wins: separation stays finite
    ours, batch = bt.fit_bt(wins), bt.fit_bt_batch(wins[None])[0]
    ref = sklearn_elo(wins)
    assert np.abs(ours - ref).max() < 0.5
    assert np.abs(batch - ref).max() < 0.5
    assert abs(ours.mean() - 1000) < 1e-6


def simulate(planted, per_pair, rng):
    """Two-player episodes: each unordered pair plays ``per_pair`` episodes."""
    records = []
    names = [f"p{i}" for i in range(len(planted))]
    for i in range(len(planted)):
        for j in range(i + 1, len(planted)):
            p = 1 / (1 + 10 ** (-(planted[i] - planted[j]) / 400))
            for e in range(per_pair):
                a_wins = rng.random() < p
                records.append(rec([names[i], names[j]], [1, -1] if a_wins else [-1, 1]))
    return records, names


def test_planted_strengths_recovered_and_covered():
    planted = np.array([880.0, 960.0, 1040.0, 1120.0])        # mean 1000 = the anchor
    rng = np.random.default_rng(123)
    covered, total, rank_ok, estimates = 0, 0, 0, []
    for rep in range(40):
        records, names = simulate(planted, 150, rng)
        r = bt.rate_records(records, players=names, n_boot=300, seed=rep)
        covered += int(((r.lo <= planted) & (planted <= r.hi)).sum())
        total += len(planted)
        rank_ok += int(np.all(np.argsort(r.elo) == np.arange(len(planted))))
        estimates.append(r.elo)
    coverage = covered / total
    assert 0.85 <= coverage <= 1.0, coverage
    assert rank_ok >= 36                                       # correct order in >= 90% of reps
    assert np.all(np.argsort(np.mean(estimates, 0)) == np.arange(len(planted)))
    assert np.abs(np.mean(estimates, 0) - planted).max() < 15  # small ridge shrinkage only


# ----------------------------------------------------------------------------- bootstrap
def test_episode_bootstrap_moves_an_episode_s_pairs_together():
    # every episode: A beats B and C beats A -> resampling episodes keeps the two counts equal
    records = [rec(["A", "B", "C"], [0, -1, 1])] * 30 + [rec(["A", "B"], [-1, 1])] * 10
    battles = bt.collect_battles(records, players=["A", "B", "C"])
    ep = bt.bootstrap_wins(battles, 500, by="episode", seed=1)
    assert np.array_equal(ep[:, 0, 1], ep[:, 2, 0])
    assert np.all(ep.sum((1, 2)) == ep[:, 0, 1] * 3 + ep[:, 1, 0])      # 3 pairs per 3-seat episode
    bat = bt.bootstrap_wins(battles, 500, by="battle", seed=1)
    assert not np.array_equal(bat[:, 0, 1], bat[:, 2, 0])
    assert np.all(bat.sum((1, 2)) == battles.n)


def test_grouped_episode_resampling_matches_naive_resampling():
    rng = np.random.default_rng(7)
    records = [rec(list(rng.permutation(["A", "B", "C"])), list(rng.permutation([1, 0, -1]))) for _ in range(60)]
    battles = bt.collect_battles(records, players=["A", "B", "C"])
    grouped = bt.bootstrap_wins(battles, 4000, by="episode", seed=3).reshape(4000, -1)
    per_ep = dense_episode_cells(battles)
    naive = np.array([per_ep[rng.integers(0, len(records), len(records))].sum(0) for _ in range(4000)])
    assert np.allclose(grouped.mean(0), naive.mean(0), atol=0.6)
    sd_g, sd_n = grouped.std(0), naive.std(0)
    nz = sd_n > 0
    assert np.all(np.abs(sd_g[nz] / sd_n[nz] - 1) < 0.15)


def test_bootstrap_is_seeded():
    records, names = simulate(np.array([950.0, 1050.0]), 40, np.random.default_rng(0))
    a = bt.rate_records(records, players=names, n_boot=200, seed=5)
    b = bt.rate_records(records, players=names, n_boot=200, seed=5)
    assert np.array_equal(a.lo, b.lo) and np.array_equal(a.hi, b.hi)
    assert np.all(a.lo <= a.elo) and np.all(a.elo <= a.hi)


# ----------------------------------------------------------------------------- Wilson
@pytest.mark.parametrize("x,n,lo,hi", [(5, 10, 0.2365931, 0.7634069), (0, 10, 0.0, 0.2775328),
                                       (10, 10, 0.7224672, 1.0), (1, 4, 0.0455878, 0.6993582)])
def test_wilson_known_values(x, n, lo, hi):
    got = bt.wilson_interval(x, n)
    assert got == pytest.approx((lo, hi), abs=1e-6)


def test_wilson_empty_and_win_rates():
    assert bt.wilson_interval(0, 0) == (0.0, 1.0)
    rates = bt.win_rates([rec(["A", "B"], [1, -1]), rec(["A", "B"], [0, 0]), rec(["B", "A"], [1, -1])])
    assert rates["A"]["wins"] == 1 and rates["A"]["seats"] == 3 and rates["A"]["draws"] == 1
    assert rates["A"]["rate"] == pytest.approx(1 / 3)


# ----------------------------------------------------------------------------- speed work (issue 12)
def test_battle_resamples_are_centred_on_the_win_matrix():
    from socialgym_benchmarks.perf.elo_fit import make_battles
    battles = make_battles(3000, 12, seed=1)
    resamples = bt.bootstrap_wins(battles, 4000, by="battle", seed=3)
    wins = battles.win_matrix()
    assert np.all(resamples.sum((1, 2)) == battles.n) and np.all(resamples[:, wins == 0] == 0)
    se = np.sqrt(wins * (1 - wins / battles.n) / 4000) + 1e-12
    assert np.all(np.abs(resamples.mean(0) - wins) <= 5 * se)


def _episodes_with_repeats_and_empties():
    """Battles of 4-seat episodes, a 2-seat policy pair that repeats its pairing (A, A vs B),
    and no-battle episodes (all same value)."""
    rng = np.random.default_rng(4)
    records = [rec(list(rng.permutation(["A", "B", "C", "D"])), list(rng.permutation([1, 0, 0, -1])))
               for _ in range(80)]
    records += [rec(["A", "A", "B"], [1, 1, -1])] * 5 + [rec(["A", "B"], [0, 0])] * 7
    return bt.collect_battles(records)


def dense_episode_cells(battles):
    """The (n_episodes, k*k) reference: what each episode adds to each win-count cell."""
    k = len(battles.players)
    out = np.zeros((battles.n_episodes, k * k), dtype=np.int64)
    np.add.at(out, (battles.episode, battles.winner * k + battles.loser), 1)
    return out


def test_episode_patterns_equal_the_dense_grouping():
    from socialgym_benchmarks.perf.elo_fit import make_battles
    rng = np.random.default_rng(6)
    names = [f"p{i}" for i in range(50)]
    # 4 of 50 competitors per episode, 6 battles: rows too wide for one integer key
    wide = bt.collect_battles([rec(list(rng.choice(names, 4, replace=False)), [3, 2, 1, 0]) for _ in range(300)]
                              + [rec(["p0", "p1", "p2", "p3"], [3, 2, 1, 0])] * 3, players=names)
    for battles in (_episodes_with_repeats_and_empties(), make_battles(5000, 12, seed=1), wide):
        patterns, counts = bt.episode_patterns(battles)
        dense_rows, dense_counts = np.unique(dense_episode_cells(battles), axis=0, return_counts=True)
        ours = sorted(zip(map(tuple, patterns.toarray().astype(int)), counts))
        assert ours == sorted(zip(map(tuple, dense_rows), dense_counts))
        assert counts.sum() == battles.n_episodes


def test_episode_bootstrap_wins_are_sums_of_drawn_patterns():
    battles = _episodes_with_repeats_and_empties()
    patterns, counts = bt.episode_patterns(battles)
    draws = bt.multinomial_counts(np.random.default_rng(9), counts, 300)
    expected = (draws @ patterns.toarray().astype(np.int64)).reshape(300, 4, 4)
    got = bt.bootstrap_wins(battles, 300, by="episode", seed=9)
    assert np.array_equal(got, expected)
    # A beats B twice in every A,A,B episode, and those two battles move together
    pairs = bt.collect_battles([rec(["A", "A", "B"], [1, 1, -1])] * 5 + [rec(["A", "B"], [0, 0])] * 7)
    twice = bt.bootstrap_wins(pairs, 300, by="episode", seed=1)[:, 0, 1]
    assert twice.max() > 0 and np.all(twice % 2 == 0) and len(set(twice)) > 3


def test_one_battle_episodes_resample_like_any_episodes():
    """Two-seat games (one battle an episode, or none when drawn) take the shortcut of one
    multinomial over cells and empty episodes; it has the law of the general pattern route."""
    rng = np.random.default_rng(8)
    records = [rec(list(rng.permutation(["A", "B", "C"]))[:2], list(rng.choice([[1, -1], [0, 0], [-1, 1]])))
               for _ in range(150)]
    battles = bt.collect_battles(records, players=["A", "B", "C"])
    assert 0 < battles.n < battles.n_episodes                       # drawn episodes are empty patterns
    shortcut = bt.bootstrap_wins(battles, 20_000, by="episode", seed=2).reshape(20_000, -1)
    patterns, counts = bt.episode_patterns(battles)
    draws = bt.multinomial_counts(np.random.default_rng(3), counts, 20_000)
    general = np.asarray((patterns.T @ draws.T).T)
    assert shortcut.dtype == general.dtype and len(set(shortcut.sum(1))) > 5
    assert np.allclose(shortcut.mean(0), general.mean(0), atol=0.15)
    assert np.allclose(shortcut.std(0), general.std(0), rtol=0.05, atol=1e-9)
    assert np.allclose(shortcut.sum(1).std(), general.sum(1).std(), rtol=0.05)


def test_episode_bootstrap_in_blocks_of_resamples(monkeypatch):
    """Many distinct episodes are drawn a block of resamples at a time (bounded memory); the
    resamples keep their sums of whole episodes and are centred on the win matrix."""
    battles = _episodes_with_repeats_and_empties()
    patterns, _ = bt.episode_patterns(battles)
    monkeypatch.setattr(bootstrap, "EPISODE_DRAW_ENTRIES", 3 * patterns.shape[0])   # 3 resamples a block
    blocks = bt.bootstrap_wins(battles, 3000, by="episode", seed=4)
    assert np.array_equal(blocks, bt.bootstrap_wins(battles, 3000, by="episode", seed=4))
    assert len({w.tobytes() for w in blocks[:30]}) == 30               # blocks are not repeats
    wins = battles.win_matrix()
    se = blocks.std(0) / np.sqrt(3000) + 1e-9
    assert np.all(np.abs(blocks.mean(0) - wins) <= 5 * se)


def test_episode_bootstrap_of_50_competitors():
    from socialgym_benchmarks.perf.elo_fit import make_battles
    battles = make_battles(20_000, 50, seed=2)
    patterns, counts = bt.episode_patterns(battles)
    played = np.count_nonzero(battles.win_matrix())
    assert patterns.shape == (played, 2500) and patterns.nnz == played      # one battle per episode
    resamples = bt.bootstrap_wins(battles, 100, by="episode", seed=1)
    assert np.all(resamples.sum((1, 2)) == 20_000)


@pytest.mark.parametrize("k,n", [(7, 20_000), (50, 20_000)])
def test_bootstrap_ratings_equal_sklearn_aggregated_within_a_hundredth_elo(k, n):
    from socialgym_benchmarks.perf.elo_fit import make_battles, sklearn_aggregated_fit
    battles = make_battles(n, k, seed=k)
    ratings = bt.rate(battles, n_boot=40, by="battle", seed=2, keep_samples=True)
    resamples = bt.bootstrap_wins(battles, 40, by="battle", seed=2)[:4]
    assert np.abs(ratings.elo - sklearn_aggregated_fit(battles.win_matrix(), tol=1e-12)).max() < 0.01
    for sample, wins in zip(ratings.samples, resamples):
        assert np.abs(sample - sklearn_aggregated_fit(wins, tol=1e-12)).max() < 0.01


class _CountingGenerator:
    """A NumPy Generator that counts the calls of each sampler."""

    def __init__(self, seed):
        self.rng, self.calls = np.random.default_rng(seed), {}

    def __getattr__(self, name):
        def call(*args, **kwargs):
            self.calls[name] = self.calls.get(name, 0) + 1
            return getattr(self.rng, name)(*args, **kwargs)
        return call


@pytest.mark.parametrize("counts_seed,total_hint", [(0, 100), (1, 600)])
def test_poisson_topped_up_draws_are_multinomial(counts_seed, total_hint):
    """The Poisson + top-up route (many categories, few items each) has the multinomial's
    sums, means, variances, covariances and marginal law, including rows redrawn after an
    overshoot (with 100 items about 2% of rows overshoot)."""
    from scipy import stats
    counts = np.random.default_rng(counts_seed).integers(1, 2 * total_hint // 100, 100)
    total, p, size = int(counts.sum()), counts / counts.sum(), 40_000
    rng = _CountingGenerator(5)
    draws = bt.multinomial_counts(rng, counts, size)
    assert rng.calls.get("random") and rng.calls.get("multinomial") == 1      # the overshoot redraw
    assert draws.shape == (size, counts.size) and np.all(draws.sum(1) == total) and draws.min() >= 0
    se = np.sqrt(total * p * (1 - p) / size)
    assert np.all(np.abs(draws.mean(0) - total * p) < 5 * se)
    assert np.allclose(draws.var(0), total * p * (1 - p), rtol=0.05)
    a, b = np.argsort(p)[-2:]
    products = (draws[:, a] - draws[:, a].mean()) * (draws[:, b] - draws[:, b].mean())
    assert abs(products.mean() + total * p[a] * p[b]) < 5 * products.std() / np.sqrt(size)
    observed = np.bincount(draws[:, a], minlength=total + 1)
    expected = size * stats.binom.pmf(np.arange(total + 1), total, p[a])
    keep = expected >= 5
    chi2 = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
    assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-3


def test_poisson_table_inverts_the_poisson_cdf():
    """Every uniform, in a slice the table answers or one a CDF step cuts (bisected), inverts
    to the count a plain search of the CDF gives, including uniforms exactly on CDF values and
    on slice edges; the windowed CDFs are scipy's within 1e-14 and miss under 1e-20 of mass."""
    from scipy.special import pdtr
    means = np.array([0.0, 0.05, 3.7, 40.5, 380.0, 20_000.0])
    table = bt.PoissonTable(means)
    assert (table.table < 0).any() and (table.table >= 0).mean() > 0.9
    for row, mean in enumerate(means):
        counts = table.start[row] + np.arange(table.cdf.shape[1])
        assert np.abs(table.cdf[row] - pdtr(counts, mean)).max() < 1e-14
        assert table.cdf[row, -1] == 1.0 and (table.start[row] == 0 or pdtr(table.start[row] - 1, mean) < 1e-20)
    rng = np.random.default_rng(3)
    column_mean = np.repeat(np.arange(means.size), 40)
    u = rng.random((500, column_mean.size))
    on_cdf = table.cdf[column_mean, np.arange(column_mean.size) % 7]
    u[0] = np.where(on_cdf < 1.0, on_cdf, 0.5)                                      # on CDF values
    u[1] = (np.arange(column_mean.size) % 4096) / 4096                            # on slice edges
    u[2] = np.nextafter(1.0, 0.0)
    out = table.invert(column_mean, u, np.empty(u.shape, dtype=np.int64))
    direct = np.stack([table.start[m] + np.searchsorted(table.cdf[m], u[:, c], side="right")
                       for c, m in enumerate(column_mean)], 1)
    assert np.array_equal(out, direct)
    assert np.all(out[:, column_mean == 0] == 0)


@pytest.mark.parametrize("distinct", [5, 400])      # one table per mean / means split in two parts
def test_table_poisson_counts_follow_the_poisson_law(distinct):
    from scipy import stats
    counts = np.concatenate([[0, 3, 1_000, 99_999], np.arange(distinct - 4) * 7 + 11])
    unit = 0.0371
    rng = _CountingGenerator(11)
    draws = bt.poisson_counts(rng, counts, unit, 30_000, chunk=1000 * counts.size)
    assert rng.calls == {"random": 30}
    assert draws.dtype == np.int64 and draws.shape == (30_000, counts.size) and np.all(draws[:, 0] == 0)
    for column in [1, 2, 3, counts.size - 1]:
        x, mean = draws[:, column], unit * counts[column]
        support = np.arange(x.max() + 1)
        observed = np.bincount(x)
        expected = x.size * stats.poisson.pmf(support, mean)
        keep = expected >= 5
        chi2 = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
        assert stats.chi2.sf(chi2, max(keep.sum() - 1, 1)) > 1e-3
    assert np.allclose(draws.mean(0), unit * counts, atol=5 * np.sqrt(unit * counts.max() / 30_000))


@pytest.mark.parametrize("distinct", [5, 400])
def test_poisson_counts_are_seeded_and_chunk_free(distinct):
    counts = np.random.default_rng(0).integers(0, distinct, 500)
    whole = bt.poisson_counts(np.random.default_rng(4), counts, 0.8, 300, chunk=300 * 500)
    assert np.array_equal(whole, bt.poisson_counts(np.random.default_rng(4), counts, 0.8, 300, chunk=7 * 500))


def test_huge_means_or_too_many_tables_use_numpy_poisson(monkeypatch):
    rng = _CountingGenerator(0)
    draws = bt.poisson_counts(rng, np.arange(0, 400_000, 7), 1.0, 2)      # split in two: ~1,260 tables
    assert rng.calls == {"poisson": 1} and draws.shape == (2, 57_143)
    monkeypatch.setattr(bootstrap, "MAX_CDF_ENTRIES", 1000)
    rng = _CountingGenerator(0)
    draws = bt.poisson_counts(rng, np.array([2, 150, 5_000]), 1.0, 10)
    assert rng.calls == {"poisson": 1} and draws.shape == (10, 3)


def test_few_categories_use_numpy_multinomial():
    rng = _CountingGenerator(0)
    draws = bt.multinomial_counts(rng, np.array([5, 0, 3]), 50)
    assert rng.calls == {"multinomial": 1} and np.all(draws.sum(1) == 8) and np.all(draws[:, 1] == 0)


@pytest.mark.parametrize("k,n", [(3, 12), (7, 300), (20, 2_000), (50, 200_000)])
def test_chord_start_gives_the_newton_ratings(k, n):
    """From the point fit, resamples take chord steps (and fall back to Newton where those do
    not descend: with 12 outcomes resamples are far from the point fit); the ratings equal the
    Newton-only fit from zero within 2e-3 Elo."""
    from socialgym_benchmarks.perf.elo_fit import make_battles
    battles = make_battles(n, k, seed=n)
    wins = bt.bootstrap_wins(battles, 200, by="battle", seed=1)
    point = bt.fit_bt(battles.win_matrix())
    assert np.abs(bt.fit_bt_batch(wins, start=point) - bt.fit_bt_batch(wins, tol=1e-9)).max() < 2e-3
