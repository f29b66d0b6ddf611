"""``python -m socialgym_training.selfplay ARGS``: the self-play script (:mod:`socialgym_training.selfplay.cli`)."""
from socialgym_env.cli_errors import main_of
from socialgym_training.selfplay.cli import main

main_of(main, "socialgym_training.selfplay")
