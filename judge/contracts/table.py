"""The table of judge contracts: every ``SPEC`` declared in a module of ``judge/contracts/``, by name.

Adding a contract is one module here, named after it, that ends with ``SPEC = ContractSpec(...)``
(``judge.contracts.spec``; ``docs/adding-a-judge-contract.md``), plus its parser in
``judge/parse/`` when no existing one reads its verdict: every module of this folder is imported
and no list needs a new line. The table refuses, at import:

- a ``SPEC`` whose name is not its module's (the module is where a reader looks for it);
- a contract ``eval.gold_types`` lets a gold type name (``JUDGE_CONTRACTS``) that is not declared
  here, or that does not grade an item on its own (no ``score``);
- ``RUBRIC_CONTRACTS`` there disagreeing with the verdicts declared here.

``eval`` owns those two name lists because it validates a gold type's declaration without the
judge (``eval`` imports nothing of ours); this table owns everything else about a contract.
A name not in the table raises :class:`UnknownContractError`, naming the table and the nearest
declared name — never a neighbour's prompt or parser.
"""

from __future__ import annotations

import copy
import difflib
import importlib
import pkgutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from eval.gold_types import JUDGE_CONTRACTS, RUBRIC_CONTRACTS
from eval.items import Item
from judge.contracts.framing import Message
from judge.contracts.spec import ContractSpec

_FOLDER = Path(__file__).resolve().parent
_PACKAGE = __name__.rpartition(".")[0]


class UnknownContractError(ValueError):
    """A contract name the table does not declare."""


def _declared() -> Mapping[str, ContractSpec]:
    """Every module of this folder's ``SPEC``, by contract name, in module order."""
    table: dict[str, ContractSpec] = {}
    for module_info in sorted(pkgutil.iter_modules([str(_FOLDER)]), key=lambda m: m.name):
        if module_info.name == __name__.rpartition(".")[2]:
            continue
        spec = getattr(importlib.import_module(f"{_PACKAGE}.{module_info.name}"), "SPEC", None)
        if spec is None:
            continue
        if not isinstance(spec, ContractSpec):
            raise TypeError(f"judge/contracts/{module_info.name}.py: SPEC must be a ContractSpec, got {spec!r}")
        if spec.name != module_info.name:
            raise ValueError(
                f"judge/contracts/{module_info.name}.py declares the contract {spec.name!r}: "
                f"name the module after its contract ({spec.name}.py) or the contract after its module"
            )
        table[spec.name] = spec
    return MappingProxyType(table)


def _check_gold_type_names(table: Mapping[str, ContractSpec]) -> None:
    """The names ``eval/gold_types.py`` allows a gold type are declared here and agree on the verdict."""
    for name in JUDGE_CONTRACTS:
        spec = table.get(name)
        if spec is None:
            raise ValueError(
                f"eval/gold_types.py: JUDGE_CONTRACTS names {name!r}, which no module of judge/contracts/ "
                f"declares (declared: {', '.join(table)}); add judge/contracts/{name}.py "
                "(docs/adding-a-judge-contract.md) or remove the name"
            )
        if not spec.grades:
            raise ValueError(
                f"eval/gold_types.py: JUDGE_CONTRACTS names {name!r}, but judge/contracts/{name}.py declares no "
                "score (it is asked beside another contract); a gold type can only name a contract that grades"
            )
        if spec.rubric != (name in RUBRIC_CONTRACTS):
            said = "lists" if name in RUBRIC_CONTRACTS else "does not list"
            raise ValueError(
                f"eval/gold_types.py: RUBRIC_CONTRACTS {said} {name!r}, but judge/contracts/{name}.py declares "
                f"the verdict {spec.verdict.__name__}; make them agree"
            )


CONTRACT_SPECS: Mapping[str, ContractSpec] = _declared()
_check_gold_type_names(CONTRACT_SPECS)
CONTRACTS: tuple[str, ...] = tuple(CONTRACT_SPECS)


def contract_spec(name: str) -> ContractSpec:
    """The declaration of contract ``name``; :class:`UnknownContractError` naming the table otherwise."""
    try:
        return CONTRACT_SPECS[name]
    except (KeyError, TypeError):
        hint = difflib.get_close_matches(str(name), list(CONTRACT_SPECS), n=1)
        raise UnknownContractError(
            f"unknown judge contract {name!r}; the contract table (judge.contracts.table.CONTRACT_SPECS, one "
            f"module per contract in judge/contracts/) declares {', '.join(CONTRACT_SPECS)}"
            + (f" (did you mean {hint[0]!r}?)" if hint else "")
        ) from None


def prompt_version(name: str) -> str:
    """The contract's prompt version (``ContractSpec.version``): 12 hex that change with anything it hashes."""
    return contract_spec(name).version()


def output_schema(name: str) -> dict[str, Any]:
    """A copy of the contract's verdict JSON Schema, to send for constrained decoding."""
    return copy.deepcopy(dict(contract_spec(name).schema))


def request_schema(name: str, item: Item | None, ordered: bool = False) -> dict[str, Any]:
    """A copy of the schema one request about ``item`` is constrained to (``ContractSpec.schema_for``):
    the verdict schema narrowed to the item where the contract does so; ``ordered`` for a grammar."""
    return copy.deepcopy(dict(contract_spec(name).schema_for(item, ordered)))


def reask_prompt(
    name: str, messages: Sequence[Message], bad_reply: str, reason: str | None = None
) -> tuple[Message, ...]:
    """``messages``, the judge's unparseable reply, and one request for only the contract's JSON object."""
    return contract_spec(name).reask(tuple(messages), bad_reply, reason)
