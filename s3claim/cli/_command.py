"""How every `s3claim` command parses and shows its options: one class for all of them.

typer draws a multi-line box for an option value click refuses (`--ttl -5`, `--offset x`),
where every other s3claim error is one line; and it shows a flag (`--version`, `--json`) as
taking a `<bool>`, which it does not. `Command` and `Group` fix both, for every command at
once: a refused value is the one line `s3claim: error: --ttl: ...`, exit 2, and a flag shows
no type. Usage mistakes that are not about a value (a missing option, an unknown one) keep
typer's box, whose usage line is the help they need.
"""

from __future__ import annotations

from typer import _click as click  # typer's own copy of click: its errors and types
from typer.core import TyperCommand, TyperGroup, TyperOption

from s3claim.cli._exit import CliError, fail

__all__ = ["Command", "Group"]


def _plain_flags(params: list[click.Parameter]) -> list[click.Parameter]:
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""  # typer's help shows the metavar, else the type (`<bool>`)
    return params


def _one_line(error: click.exceptions.BadParameter) -> CliError:
    """`--ttl: -5 is not in the range x>=1.` for click's "Invalid value for '--ttl': ..."."""
    param = error.param
    names = [*param.opts] if isinstance(param, TyperOption) else []
    where = max(names, key=len) if names else (error.param_hint or "")
    if not isinstance(where, str):
        where = " / ".join(where)
    return CliError(f"{where}: {error.message}" if where else error.message)


class Command(TyperCommand):
    """A command whose refused option values are one line, and whose flags show no type."""

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        return _plain_flags(super().get_params(ctx))

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.exceptions.MissingParameter:
            raise  # typer's box: its usage line says what to give
        except click.exceptions.BadParameter as error:
            raise fail(_one_line(error)) from None


class Group(TyperGroup):
    """The `s3claim` group: its flags (`--version`, `--help`) show no type either."""

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        return _plain_flags(super().get_params(ctx))
