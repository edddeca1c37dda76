"""Shared by every stage: the exception tree, quantiles (linear, named), "not available",
user YAML/JSON files, the JSON edge (``schema.read_document`` reads a document, ``files.jsonable``
writes a result), the value-with-uncertainty type, number formatting and the lazy front doors
(``lazy.lazy_exports``)."""
