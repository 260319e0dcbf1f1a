"""One registry convention for every name-keyed extension point of the library.

Manifolds (for the shared law tests), retractions (per manifold class),
discrete Lagrangians and schemes are each kept in a :class:`Registry`, and
every one behaves the same way:

* **register** with a decorator or a call, ``register_X(obj)`` /
  ``@register_X``: a second object under a taken name is refused with a
  ``ValueError`` unless ``overwrite=True`` (registering the same object again
  is a no-op, so a module may be imported twice);
* **look up** by name with :meth:`Registry.get`: an unknown name is a
  ``ValueError`` that lists the valid names and says how to add one;
* **list** with :meth:`Registry.names` (registration order).

A :class:`Registry` is also a mutable mapping (``name in REG``, ``REG[name]``,
iteration), so code written against the earlier plain dicts keeps working.
Like jaxlie's ``register_lie_group``, the decorators return what they
decorate unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Generic, TypeVar

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(MutableMapping[str, T], Generic[T]):
    """Named objects of one kind, with the library's one registration convention.

    Parameters
    ----------
    kind : str
        What is registered, for messages (``"discrete Lagrangian"``).
    hint : str
        How to add one, appended to the unknown-name message
        (``"add one with register_rule"``).
    check : callable, optional
        ``check(name, obj)`` raises ``TypeError`` for an object that may not
        be registered (run before anything is stored).

    Notes
    -----
    :meth:`child` gives a registry that starts with this one's entries
    (a manifold subclass inherits its parent's retractions): an inherited
    entry may be replaced without ``overwrite``; an entry registered on the
    child itself may not.
    """

    def __init__(self, kind: str, *, hint: str = "", check: Callable[[str, T], None] | None = None) -> None:
        self.kind = kind
        self.hint = hint
        self.check = check
        self._entries: dict[str, T] = {}
        self._inherited: set[str] = set()

    # ------------------------------------------------------------ the convention
    def register(self, name: str, obj: T, *, overwrite: bool = False) -> T:
        """Store ``obj`` under ``name`` and return it.

        Raises
        ------
        TypeError
            For a name that is not a string, or an object ``check`` refuses.
        ValueError
            For an empty name, or a name taken by another object (without ``overwrite``).
        """
        if not isinstance(name, str):
            raise TypeError(f"a {self.kind} is registered under a string name, got {type(name).__name__}")
        if not name:
            raise ValueError(f"a {self.kind} needs a non-empty name")
        if self.check is not None:
            self.check(name, obj)
        old = self._entries.get(name)
        if (name in self._entries and old is not obj and old != obj and name not in self._inherited
                and not overwrite):
            raise ValueError(f"a {self.kind} named {name!r} is already registered; pass overwrite=True to replace it")
        self._entries[name] = obj
        self._inherited.discard(name)
        return obj

    def get(self, name: str, default: object = ...) -> T:  # type: ignore[override]
        """The object registered under ``name``.

        Raises
        ------
        ValueError
            For an unknown name (the message lists the valid names), unless
            ``default`` is given, which is then returned.
        """
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            if default is not ...:
                return default  # type: ignore[return-value]
            raise ValueError(self.unknown(name)) from None

    def unknown(self, name: object) -> str:
        """The message for an unknown name: what was asked, the valid names, and how to add one."""
        valid = ", ".join(repr(k) for k in self._entries) or "none"
        return f"unknown {self.kind} {name!r}; valid: {valid}" + (f" ({self.hint})" if self.hint else "")

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a ``ValueError`` listing the valid names if it is not registered)."""
        if name not in self._entries:
            raise ValueError(self.unknown(name))
        del self._entries[name]
        self._inherited.discard(name)

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(self._entries)

    def child(self, *, hint: str | None = None) -> Registry[T]:
        """A registry starting with this one's entries, each replaceable there without ``overwrite``."""
        out: Registry[T] = Registry(self.kind, hint=self.hint if hint is None else hint, check=self.check)
        out._entries = dict(self._entries)
        out._inherited = set(self._entries)
        return out

    # ------------------------------------------------------ the mapping protocol
    def __getitem__(self, name: str) -> T:
        return self._entries[name]

    def __setitem__(self, name: str, obj: T) -> None:
        self.register(name, obj, overwrite=True)

    def __delitem__(self, name: str) -> None:
        del self._entries[name]
        self._inherited.discard(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._entries)})"
