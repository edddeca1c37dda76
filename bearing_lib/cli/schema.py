"""``bearing schema NAME``: the JSON Schema of a document bearing writes and reads.

Exit codes: 0 schema printed (or written with ``--out``); 1 unknown document name.
"""

from __future__ import annotations

from pathlib import Path

import typer

from bearing_lib.cli._common import bearing_errors

# document name -> (module, function returning the schema dict); imported only when asked for
DOCUMENTS: dict[str, tuple[str, str]] = {
    "limits": ("bearing_lib.limits.result", "schema_document"),
    "estimate": ("bearing_lib.common.estimate", "schema_document"),
    "plan": ("bearing_lib.plan.capacity_plan", "schema_document"),
    "profile": ("bearing_lib.traffic.document", "profile_schema_document"),
    "compare": ("bearing_lib.compare.result", "schema_document"),
}


def schema_for(name: str) -> dict:
    """The JSON Schema of document ``name`` (one of :data:`DOCUMENTS`)."""
    import importlib

    from bearing_lib.common.errors import ParameterError

    if name not in DOCUMENTS:
        raise ParameterError(f"no schema named {name!r}; documents with a schema: {', '.join(sorted(DOCUMENTS))}")
    module, fn = DOCUMENTS[name]
    return getattr(importlib.import_module(module), fn)()


def register(app: typer.Typer) -> None:
    @app.command("schema")
    def schema_cmd(
        name: str = typer.Argument(..., help="Document: " + " | ".join(DOCUMENTS) + "."),
        out: Path | None = typer.Option(None, "--out", help="Write the schema here instead of printing it."),
    ) -> None:
        """Print the JSON Schema (draft 2020-12, versioned) of a document bearing writes and reads."""
        import json

        with bearing_errors():
            text = json.dumps(schema_for(name), indent=2, ensure_ascii=False) + "\n"
            if out is None:
                typer.echo(text, nl=False)
            else:
                out.write_text(text, encoding="utf-8")
                typer.echo(f"wrote {out}")


__all__ = ["DOCUMENTS", "register", "schema_for"]
