"""The class registries of syntax-nmt (parser backends, syntax methods): one mechanism for both.

A :class:`Registry` belongs to one package. Every module of the package (except ``base`` and names starting with
``_``) registers its classes with :meth:`Registry.register`, and the registry imports those modules the first
time it is read, so a new parser or method is one new file in its package and nothing else. Order: the
package's built-in modules in their given order, its other modules alphabetically, then classes registered from
elsewhere (a test's), in registration order. A class registered from outside the package first makes the
registry discover the package, so a name that collides with a module's class is refused at once, where it is
registered, and not later wherever the package happens to be read first.
"""

import dataclasses
import importlib
import pkgutil
from typing import Callable, Dict, Iterator, MutableMapping, Sequence, Tuple, Type, TypeVar

C = TypeVar("C", bound=type)


def register_class(registry: MutableMapping[str, Type], kind: str, name: str) -> Callable[[C], C]:
    """Class decorator: ``registry[name] = cls`` and ``cls.name = name``; a second class of the same name raises
    ``ValueError`` naming ``kind``."""

    def deco(cls: C) -> C:
        if name in registry:
            raise ValueError(f"{kind} {name!r} registered twice")
        cls.name = name
        registry[name] = cls
        return cls

    return deco


def compose_config(name: str, base: type, parts: Sequence[Tuple[str, type]], fields=()) -> type:
    """One dataclass holding the fields of ``base`` and of every part's dataclass (and ``fields``, as
    :func:`dataclasses.make_dataclass` takes them), as fairseq composes ``TransformerConfig``: how the model's options
    and the syntax criterion's are made from the registered methods' ``config`` and ``loss_config``.

    Args:
        parts: ``(owner, dataclass)``, the owner named in messages (``"method sla"``); a later part's fields come
            after an earlier one's.

    Raises:
        TypeError: two parts (or a part and ``base``) declare a field of the same name.
    """
    owner = {f.name: "the base" for f in dataclasses.fields(base)}
    for who, config in parts:
        for f in dataclasses.fields(config):
            if not f.name.startswith("_") and owner.setdefault(f.name, who) != who:  # _name: fairseq's own
                raise TypeError(f"--{f.name.replace('_', '-')} is declared by both {owner[f.name]} and {who}")
    return dataclasses.make_dataclass(name, list(fields), bases=(*reversed([c for _, c in parts]), base))


class Registry(MutableMapping[str, Type]):
    """``name -> class`` for the classes that the modules of ``package`` register, discovered on first read.

    Args:
        kind: what a class is, in messages (``"syntax method"``).
        package: the dotted name of the package whose modules register.
        builtin: the package's built-in modules (names without the package), imported first and in this order.
        skip: modules that are not imported (the interface).
    """

    def __init__(self, kind: str, package: str, builtin: Sequence[str] = (), skip: Sequence[str] = ("base",)):
        self.kind, self.package, self.builtin, self.skip = kind, package, tuple(builtin), tuple(skip)
        self._entries: Dict[str, Type] = {}
        self._state = "new"  # new -> discovering -> discovered

    # -- registering ----------------------------------------------------------------------------------
    def register(self, name: str) -> Callable[[C], C]:
        """Class decorator registering a class as ``name`` (and setting ``cls.name``)."""

        def deco(cls: C) -> C:
            if not cls.__module__.startswith(self.package + "."):
                self.discover()  # a name taken by one of the package's modules is refused here, not later
            register_class(self._entries, self.kind, name)(cls)
            return cls

        return deco

    def modules(self) -> Sequence[str]:
        """The package's modules that register, in discovery order (dotted names)."""
        package = importlib.import_module(self.package)
        found = sorted(m.name for m in pkgutil.iter_modules(package.__path__)
                       if m.name not in self.skip and not m.name.startswith("_"))
        return [f"{self.package}.{n}" for n in (*self.builtin, *(n for n in found if n not in self.builtin))]

    def discover(self) -> "Registry":
        """Import every module of the package once (each registers its classes); then order the entries."""
        if self._state != "new":
            return self  # done, or under way (a module being imported reads the registry)
        self._state = "discovering"
        try:
            order = self.modules()
            for module in order:
                importlib.import_module(module)
        except BaseException:
            self._state = "new"
            raise
        rank = {module: i for i, module in enumerate(order)}
        # a module imported directly before discovery registered early: put it back in place
        items = sorted(self._entries.items(), key=lambda item: rank.get(item[1].__module__, len(rank)))
        self._entries = dict(items)
        self._state = "discovered"
        return self

    def get_class(self, name: str) -> Type:
        """The class registered as ``name``.

        Raises:
            ValueError: naming the registered names, if there is none of that name.
        """
        self.discover()
        try:
            return self._entries[name]
        except KeyError:
            raise ValueError(f"unknown {self.kind} {name!r}; this syntax-nmt has: {', '.join(self._entries)}") \
                from None

    # -- the mapping (every read discovers first) -------------------------------------------------------
    def __getitem__(self, name: str) -> Type:
        return self.discover()._entries[name]

    def __setitem__(self, name: str, cls: Type) -> None:
        self._entries[name] = cls

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.discover()._entries))

    def __len__(self) -> int:
        return len(self.discover()._entries)

    def __contains__(self, name) -> bool:
        return name in self.discover()._entries

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.package!r}: {', '.join(self._entries)})"
