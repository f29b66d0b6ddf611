"""Triadic Werewolf study (seed 002): the Jester self-learning loop (:mod:`.lessons`,
:mod:`.study`), the measurements read from its logs (:mod:`.analysis`) and the seed's regex
taggers for theory-of-mind order and strategy category (:mod:`.tom`)."""
