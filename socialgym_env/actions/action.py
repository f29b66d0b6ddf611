"""What parsing gives: a legal :class:`Action`, or an :class:`ActionError` with the reason."""
from __future__ import annotations

from dataclasses import dataclass


class ActionError(ValueError):
    """An action string that does not parse or is not legal; ``str(err)`` is the reason."""



@dataclass(frozen=True, init=False)
class Action:
    """A parsed, validated action: its type, its argument values and the canonical text."""

    type: str
    values: tuple = ()
    text: str = ""

    def __init__(self, type: str, values: tuple = (), text: str = ""):
        # Not the frozen dataclass's __init__ (object.__setattr__ per field, twice as slow):
        # an enumeration builds one Action per legal move.
        fields = self.__dict__
        fields["type"], fields["values"], fields["text"] = type, values, text

    @property
    def arg(self):
        """The first argument value (most action types take one)."""
        return self.values[0] if self.values else None

    def __str__(self) -> str:
        return self.text or self.type
