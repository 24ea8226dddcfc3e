"""Turn what is wrong with params.yaml into words: the key, the value, the valid choices, the fix."""

import difflib
import math
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, Tag, ValidationError


class SettingProblem(ValueError):
    """What a validator of a section (or of the whole file) found wrong with one key below it: `key`, dotted from
    that section, and the rest of the sentence (the value, the valid choices, the fix)."""

    def __init__(self, key: str, problem: str):
        super().__init__(f"{key}: {problem}")
        self.key = key
        self.problem = problem


def non_finite_keys(raw: Any, prefix: str = "") -> list[str]:
    """Dotted keys whose value is inf or nan: no setting of the project takes one (YAML's .inf, .nan)."""
    if isinstance(raw, dict):
        return [key for name, value in raw.items() for key in non_finite_keys(value, f"{prefix}{name}.")]
    if isinstance(raw, list):
        return [key for index, value in enumerate(raw) for key in non_finite_keys(value, f"{prefix}{index}.")]
    return [prefix.removesuffix(".")] if isinstance(raw, float) and not math.isfinite(raw) else []


def keys_at(model: type[BaseModel], location: tuple[Any, ...]) -> list[str]:
    """The keys a schema section accepts, for the section that holds `location`'s last key."""
    holder = located(model, location)[1]
    return list(holder.model_fields) if isinstance(holder, type) and issubclass(holder, BaseModel) else []


def located(model: type[BaseModel], location: tuple[Any, ...]) -> tuple[list[str], Any]:
    """`location` (pydantic's) as params.yaml spells it, without the tags pydantic adds inside a tagged union (a
    link's `name` or `numbers`), and the schema of the section holding its last key (None where the schema does not
    say)."""
    annotation: Any = model
    written: list[str] = []
    holder: Any = None
    for part in location:
        annotation = _unwrapped(annotation)
        member = _tagged_member(annotation, part)
        if member is not None:
            annotation = member
            continue
        written.append(str(part))
        holder = annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel) and part in annotation.model_fields:
            annotation = annotation.model_fields[part].annotation
        elif get_origin(annotation) is dict:
            annotation = get_args(annotation)[1]
        else:
            annotation = None
    return written, holder


def _tagged_member(union: Any, tag: Any) -> Any:
    """The member of a tagged union (pydantic's Discriminator) that `tag` names; None where `union` is none."""
    for member in get_args(union) if get_origin(union) in (Union, UnionType) else ():
        if any(isinstance(meta, Tag) and meta.tag == tag for meta in getattr(member, "__metadata__", ())):
            return _unwrapped(member)
    return None


def _unwrapped(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def explain(where: str, err: ValidationError, model: type[BaseModel]) -> str:
    """Every problem pydantic found, one line each, then the fix."""
    count = err.error_count()
    lines = [f"{where} is invalid ({count} problem{'s' if count > 1 else ''}):"]
    for problem in err.errors():
        found = problem.get("ctx", {}).get("error")
        where_in = located(model, tuple(problem["loc"]))[0]
        if isinstance(found, SettingProblem):
            lines.append(f"  - {'.'.join([*where_in, found.key])}: {found.problem}")
        else:
            lines.append(f"  - {'.'.join(where_in)}: {describe(dict(problem), model)}")
    lines.append(f"Fix {where} (or the -S override you passed to `dvc exp run`) and run again.")
    return "\n".join(lines)


BOUNDS = {  # pydantic's error type -> its bound's key in the error's context, and the rule in words
    "greater_than_equal": ("ge", "at least"),
    "greater_than": ("gt", "more than"),
    "less_than_equal": ("le", "at most"),
    "less_than": ("lt", "less than"),
}


def describe(problem: dict[str, Any], model: type[BaseModel]) -> str:
    """One problem in words."""
    kind, given = problem["type"], problem.get("input")
    if kind in BOUNDS:
        bound, words = BOUNDS[kind]
        return f"{given!r} is out of range; write a value {words} {problem.get('ctx', {}).get(bound)}"
    if kind == "missing":
        return "missing; this key is required (docs/params.md lists every key)"
    if kind == "extra_forbidden":
        return _unknown_key(str(problem["loc"][-1]), given, keys_at(model, tuple(problem["loc"])))
    if kind in ("literal_error", "enum"):
        expected = problem.get("ctx", {}).get("expected", "")
        return f"{given!r} is not valid; choose one of: {expected}"
    if kind in ("int_type", "float_type", "bool_type", "string_type", "list_type", "dict_type"):
        wanted = {
            "int_type": "a whole number",
            "float_type": "a number",
            "bool_type": "true or false",
            "string_type": "a string",
            "list_type": "a list",
            "dict_type": "a mapping",
        }[kind]
        return f"{given!r} ({type(given).__name__}) is not {wanted}; write {wanted} (a boolean is not a number)"
    message = problem["msg"].removeprefix("Value error, ")
    return message if isinstance(given, dict) else f"{given!r}: {message}"  # a section's rule names its own keys


def _unknown_key(name: str, given: Any, valid: list[str]) -> str:
    nearest = difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
    hint = f"did you mean {nearest[0]!r}? " if nearest else ""
    choices = f"valid keys here: {', '.join(valid)}" if valid else "remove it"
    return f"unknown key (value {given!r}); {hint}{choices}"
