import pytest

import socialgym_env
from agents.runner import EpisodeJob, run_jobs
from training.detection_logs import SHORT_CONFIGS


def scripted_records(game: str, seeds, **overrides) -> list[dict]:
    """Episodes of one detection game played by the scripted baselines (fast, seeded)."""
    config = {**SHORT_CONFIGS[game], **overrides}
    n = len(socialgym_env.make(game, **config).possible_agents)
    return run_jobs([EpisodeJob(game=game, seed=s, seats=["scripted:heuristic"] * n, config=dict(config))
                     for s in seeds], log_path=None)


@pytest.fixture(scope="session", name="scripted_records")
def scripted_records_fixture():
    return scripted_records


@pytest.fixture(scope="session")
def detection_records() -> dict:
    """game -> six scripted episodes, for every detection game."""
    return {game: scripted_records(game, range(6)) for game in SHORT_CONFIGS}


@pytest.fixture(scope="session")
def detection_log_dir(tmp_path_factory, detection_records):
    """The scripted episodes written as standard logs, one file per game."""
    from socialgym_env.logs import append_episode
    folder = tmp_path_factory.mktemp("detect_logs")
    for game, records in detection_records.items():
        for record in records:
            append_episode(folder / f"{game}.jsonl", record)
    return folder
