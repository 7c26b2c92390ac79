"""Registries of providers: the names a setting chooses from (`embedding.provider`, `rerank.provider`,
`chat.provider`) and, for each name, the factory that builds its adapter from Settings.

One registry per adapter package (`embedding/providers.py`, `rerank/providers.py`, `clients/providers.py`): `config`
reads a setting's choices from it, `bootstrap` looks the chosen name up in it and calls the factory. A factory is a
function next to its adapter, `build(settings, env) -> adapter` (env: where its key is read, None = the process's
environment), named here as "module:function" of the registry's package and imported only when it first builds,
as simonw/llm loads its own providers by module name through the hooks its plugins use. So a registry is names
only: reading the choices loads no adapter (nor numpy, nor an SDK), and `config`, which the adapters import, depends
on none of them. Adding a provider is its module, with its factory, and one `Provider` line in its registry.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError

# The variable a provider's key is read from when its `*.api-key-env` setting is empty.
DEFAULT_KEY_ENV = {"dashscope": "DASHSCOPE_API_KEY", "openai": "OPENAI_API_KEY"}


def secret(var: str, env: Mapping[str, str] | None = None) -> str:
    """The value of the variable `var` in `env` (None: the process's environment), "" when unset."""
    return (os.environ if env is None else env).get(var, "").strip()


@dataclass(frozen=True)
class Provider:
    """A value of the setting and where its factory is: "module:function" in the registry's package."""

    name: str
    factory: str


@dataclass(frozen=True)
class Registry:
    """The providers of one setting, in the order its choices are shown. `first` and `last` are choices that name
    no adapter and that the caller handles itself (`auto`, `none`, `offline`)."""

    setting: str
    package: str
    providers: tuple[Provider, ...]
    first: tuple[str, ...] = ()
    last: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if len(set(self.choices)) != len(self.choices):
            raise ValueError(f"{self.setting}: a provider is registered twice in {self.choices}")
        for p in self.providers:
            if p.factory.count(":") != 1:
                raise ValueError(f"{self.setting} = {p.name}: the factory {p.factory!r} is not 'module:function'")

    @property
    def names(self) -> tuple[str, ...]:
        """The providers that build an adapter."""
        return tuple(p.name for p in self.providers)

    @property
    def choices(self) -> tuple[str, ...]:
        """Every value the setting takes (`config.KEYS`)."""
        return (*self.first, *self.names, *self.last)

    def factory(self, name: str) -> Callable[..., Any]:
        """The factory of provider `name`, its module imported now."""
        provider = next((p for p in self.providers if p.name == name), None)
        if provider is None:
            raise ConfigError(f"{self.setting} = {name!r} builds nothing here; one of: {', '.join(self.names)}.")
        module, function = provider.factory.split(":")
        built: Callable[..., Any] = getattr(importlib.import_module(f"{self.package}.{module}"), function)
        return built
