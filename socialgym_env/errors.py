"""Errors raised to users. Each names what was wrong and what is valid."""


class SocialGymError(Exception):
    """Base class of the package's own errors."""


class UnknownGameError(SocialGymError, KeyError):
    def __str__(self):  # KeyError would quote the message
        return self.args[0]


class UnknownAgentError(SocialGymError, KeyError):
    """A seat that is not in the game (``observe``, ``observation_text``, ``grammar``, ...)."""

    def __str__(self):  # KeyError would quote the message
        return self.args[0]


class ConfigError(SocialGymError, ValueError):
    """A bad configuration value or key."""


class InvalidActionError(SocialGymError, ValueError):
    """Raised by ``step`` only in ``invalid_action="raise"`` mode."""


class GameOverError(SocialGymError, RuntimeError):
    """``step`` after the episode ended."""


class NotYourTurnError(SocialGymError, RuntimeError):
    """An action by an agent that is not the one selected."""


class EngineError(SocialGymError, RuntimeError):
    """A game declared a flow the engine cannot run (a bug in the game module)."""


class LogFormatError(SocialGymError, ValueError):
    """A log line that is not a valid episode record."""
