"""Policies that play Social Gym games: scripted baselines, LLM policies, humans; and runners."""
from .base import Decision, Policy
from .registry import make_policy

__all__ = ["Decision", "Policy", "make_policy"]
