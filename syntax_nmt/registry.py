"""The class registries of syntax-nmt (parser backends, syntax methods): one decorator for both."""

from typing import Callable, Dict, Type, TypeVar

C = TypeVar("C", bound=type)


def register_class(registry: Dict[str, Type], kind: str, name: str) -> Callable[[C], C]:
    """Class decorator: ``registry[name] = cls`` and ``cls.name = name``; a second class of the same name raises
    ``ValueError`` naming ``kind``."""

    def deco(cls: C) -> C:
        if name in registry:
            raise ValueError(f"{kind} {name!r} registered twice")
        cls.name = name
        registry[name] = cls
        return cls

    return deco
