"""The ``import-contracts`` part (docs/concepts/architecture.md): what each top-level folder
may import of the project, from the import-linter contracts of ``pyproject.toml``
(``lint-imports`` holds the code to them)."""

from __future__ import annotations

from typing import Any

from .markdown import cell


def import_contracts_reference() -> str:
    """What each top-level folder may import of the project, from the import-linter contracts
    of ``pyproject.toml`` (``lint-imports`` holds the code to them): a contract added, changed
    or removed there is so here at the next build."""
    import tomllib

    from octotrain.settings import REPO_ROOT

    linter = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "importlinter"
    ]
    roots: list[str] = linter["root_packages"]
    forbidden = import_bans(linter["contracts"])
    rows = ["| folder | may import | may not import | contract |", "|---|---|---|---|"]
    for root in roots:
        bans = forbidden.get(root, {})
        allowed = [other for other in roots if other != root and other not in bans]
        rows.append(
            f"| `{root}/` | {', '.join(f'`{name}`' for name in allowed) or 'nothing'} | "
            f"{', '.join(f'`{name}`' for name in bans) or 'nothing'} | "
            f"{'; '.join(cell(name) for name in dict.fromkeys(bans.values()))} |"
        )
    return "\n".join(rows) + "\n"


def import_bans(contracts: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """For each module a contract binds, the modules it may not import, each with the name of
    the contract that says so. A kind of contract not read here fails the build rather than
    leave a rule out of the docs."""
    bans: dict[str, dict[str, str]] = {}
    for contract in contracts:
        if contract["type"] == "forbidden":
            pairs = [
                (source, module)
                for source in contract["source_modules"]
                for module in contract["forbidden_modules"]
            ]
        elif contract["type"] == "layers":  # a layer may not import the layers above it
            layers = contract["layers"]
            pairs = [(low, high) for index, low in enumerate(layers) for high in layers[:index]]
        else:
            raise ValueError(f"import contracts of type {contract['type']!r} are not shown")
        for source, module in pairs:
            bans.setdefault(source, {}).setdefault(module, contract["name"])
    return bans
