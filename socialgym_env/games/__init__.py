"""One module per game; each defines ``GAME`` (its Game subclass). See registry.GAME_MODULES."""
