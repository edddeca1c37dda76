"""The application that runs the report: the notebook steps (``pipeline``), the papermill runner
with its parameter and input checks, lock and atomic publish (``runner``), the reports index
(``index``) and ISO-week arithmetic (``weeks``).

It sits above :mod:`bearing_lib.report`, which only builds the typed report model and renders it:
``app`` imports ``report``, never the other way round. Modules are imported on use
(``from bearing_lib.app import runner``), so ``bearing --help`` pays for none of them.
"""
