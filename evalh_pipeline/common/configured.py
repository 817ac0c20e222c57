"""Plugin bases generic in their config model: ``class Mine(Evaluator[MineConfig])``.

The config class of a plugin is declared once, as the generic parameter of its base. When
the class is made, :meth:`Configured.__init_subclass__` sets its ``Config`` from that
parameter (what the loader validates an eval's config with, before any instance exists),
and a type checker sees ``self.config`` as an instance of the parameter.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, cast, get_args, get_origin

from pydantic import BaseModel
from typing_extensions import NoDefault, TypeVar

__all__ = ["ConfigT", "Configured"]

# Covariant: an Evaluator[ExactMatchConfig] is an Evaluator (its config is read, never replaced).
ConfigT = TypeVar("ConfigT", bound=BaseModel, default=BaseModel, covariant=True)


class Configured(Generic[ConfigT]):
    """Base of the plugin bases: ``Config`` (the class) and ``config`` (the validated instance).

    An intermediate base generic in a TypeVar of its own (``class SqlStore(ReadableStore[SqlConfigT])``)
    gets the TypeVar's default (else its bound) as its ``Config``.
    """

    Config: ClassVar[type[BaseModel]] = BaseModel
    config: ConfigT

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = _config_parameter(cls)
        if declared is None:
            return  # `class Mine(Evaluator)`: the parent's Config, or one the class body sets
        if "Config" in cls.__dict__ and cls.__dict__["Config"] is not declared:
            raise TypeError(f"{cls.__qualname__} declares its config twice ({declared.__name__} as the "
                            f"generic parameter, {cls.__dict__['Config'].__name__} as Config): keep the parameter")
        cls.Config = declared

    def _validated_config(self, data: object) -> ConfigT:
        """``data`` validated by ``Config``."""
        # Config is the class of ConfigT (__init_subclass__ set it from the generic parameter),
        # a link a type checker cannot follow from the ClassVar.
        return cast(ConfigT, self.Config.model_validate(data))


def _config_parameter(cls: type) -> type[BaseModel] | None:
    """The config model named by the generic parameter in ``cls``'s own bases, or None."""
    # Only the bases written in this class statement: __orig_bases__ is otherwise inherited.
    for base in cls.__dict__.get("__orig_bases__", ()):
        origin = get_origin(base)
        if not (isinstance(origin, type) and issubclass(origin, Configured)):
            continue
        (argument,) = get_args(base)
        if isinstance(argument, TypeVar):
            default = getattr(argument, "__default__", NoDefault)
            argument = argument.__bound__ if default is NoDefault else default
        if isinstance(argument, type) and issubclass(argument, BaseModel):
            return argument
    return None
