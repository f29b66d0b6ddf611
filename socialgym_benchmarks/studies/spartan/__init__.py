"""SPaRTan (Self-Play and Reflect-Transfer, paper section 4-5): a model plays self-play games,
reflects on its trajectories and outcomes into a playbook, and plays later games with it.

Modules: ``experiment`` (config file, playing through the tournament runner, self-play,
reflection cache, evaluation cells), ``reflect`` (Appendix-F prompt, reflectors), ``playbook``
(versioned files, placebo), ``sides`` (alt/main or seat sides), ``stats`` (Wilson, the paired
McNemar/sign-flip test and bootstrap, the two-proportion test), ``parroting`` (Appendix M.4),
``protocols`` (within, cross, multigame, distill; the stop rule), ``planted`` (scripted students
for the planted-effect and null checks), ``report`` (CSV/JSON/Markdown/PNG), ``cli``
(``socialgym spartan ...``).
"""
from . import planted

# imported for its side effect: it registers the planted:... student specs
__all__ = ["planted"]
