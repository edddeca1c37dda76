"""The ``bearing`` command line: a thin Typer app over the library (see ``main``)."""
