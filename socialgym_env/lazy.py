"""A dict whose contents are computed on first use (the engine's ``infos`` values).

Building every seat's structured view after every transition (legal actions, JSON schema,
enumeration, rendered messages) is most of an env step, and most loops never read most of it.
:class:`LazyInfo` holds a builder instead and runs it the first time anything looks inside
(a key, ``in``, ``len``, iteration, ``==``, ``repr``, ``json.dumps``, ``dict(info)``, copy,
deepcopy, pickle). After that it is an ordinary dict with the same keys in the same order as
an eagerly built one.

A view must describe the state at the moment it was issued, so the engine calls :meth:`seal`
on every view it issued before it changes the state again; a view that somebody still holds
is built then (or, given a ``freeze`` function, frozen: only its state-dependent part is read
then); one nobody holds has been seen by nobody, so it may be issued again, unbuilt, for the
next state.
"""
from __future__ import annotations

import copy
import sys
from typing import Callable, Optional


def _references_while_sealing() -> int:
    """How many references the sealing loop itself holds to a view that no one else holds
    (the list of issued views, the loop variable, the call's own; CPython-version dependent),
    measured once by running the same loop on a probe."""
    issued = [LazyInfo(dict, "probe", None)]
    for info in issued:
        return info._references_from_a_method()


class LazyInfo(dict):
    """A dict filled by ``build()`` the first time it is looked at."""

    __slots__ = ("_build", "_freeze")

    def __init__(self, build: Callable[[], dict], first_key, first_value,
                 freeze: Optional[Callable[[], Callable[[], dict]]] = None):
        # The first entry is stored at once: C code that checks a dict's size without asking
        # it (json's encoder writes "{}" for an empty one) must see a non-empty dict. The
        # builder's dict starts with the same entry, so the key order is the eager one.
        dict.__setitem__(self, first_key, first_value)
        self._build = build
        self._freeze = freeze

    # -- filling ----------------------------------------------------------------------
    def _fill(self) -> "LazyInfo":
        build = self._build
        if build is not None:
            self._build = None
            dict.update(self, build())
        return self

    @property
    def built(self) -> bool:
        return self._build is None

    def _references_from_a_method(self) -> int:
        return sys.getrefcount(self)        # as seal() counts them

    def seal(self, held_by_env: bool) -> bool:
        """Called by the env, looping over the views it issued, just before the state
        changes: build now if anyone besides the env still holds this view (so it keeps
        describing the state it was issued for). ``held_by_env``: the view is still a value of
        ``env.infos``. With a ``freeze`` function, a held view is not built but frozen:
        ``freeze()`` reads now what depends on the state and returns the builder of the rest
        (parts that no later change can touch), so a held view nobody reads costs only that.
        Returns True when nobody else holds the view and it is still unbuilt: nobody has seen
        it, so the env may issue the same object again for the next state (its builder reads
        the state when first read) instead of a new one (one it does not issue again, it
        drops)."""
        if self._build is None:
            return False
        if sys.getrefcount(self) > _SEALING_REFERENCES + held_by_env:
            if self._freeze is not None:
                self._build, self._freeze = self._freeze(), None
            else:
                self._fill()
            return False
        return True

    def drop(self) -> None:
        """Forget the builder of a view nobody can read any more (not issued again)."""
        self._build = self._freeze = None

    # -- every read fills first -------------------------------------------------------
    def __getitem__(self, key):
        return dict.__getitem__(self._fill(), key)

    def __contains__(self, key):
        return dict.__contains__(self._fill(), key)

    def __iter__(self):
        return dict.__iter__(self._fill())

    def __len__(self):
        return dict.__len__(self._fill())

    def __eq__(self, other):
        return dict.__eq__(self._fill(), other)

    def __ne__(self, other):
        return dict.__ne__(self._fill(), other)

    __hash__ = None

    def __repr__(self):
        return dict.__repr__(self._fill())

    def __or__(self, other):
        return dict.__or__(self._fill(), other)

    def __ror__(self, other):
        return dict.__ror__(self._fill(), other)

    def __ior__(self, other):
        dict.__ior__(self._fill(), other)
        return self

    def get(self, key, default=None):
        return dict.get(self._fill(), key, default)

    def keys(self):
        return dict.keys(self._fill())

    def values(self):
        return dict.values(self._fill())

    def items(self):
        return dict.items(self._fill())

    def copy(self):
        return dict(dict.items(self._fill()))

    # -- writes fill first too, so an early write is never overwritten by the builder ----
    def __setitem__(self, key, value):
        dict.__setitem__(self._fill(), key, value)

    def __delitem__(self, key):
        dict.__delitem__(self._fill(), key)

    def pop(self, *args):
        return dict.pop(self._fill(), *args)

    def popitem(self):
        return dict.popitem(self._fill())

    def setdefault(self, key, default=None):
        return dict.setdefault(self._fill(), key, default)

    def update(self, *args, **kwargs):
        dict.update(self._fill(), *args, **kwargs)

    def clear(self):
        self._build = None
        dict.clear(self)

    # -- copies are plain dicts of the built contents ------------------------------------
    def __reduce__(self):
        return dict, (dict(dict.items(self._fill())),)

    def __reduce_ex__(self, protocol):
        return self.__reduce__()

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return copy.deepcopy(dict(dict.items(self._fill())), memo)


_SEALING_REFERENCES = _references_while_sealing()
