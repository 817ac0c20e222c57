"""``evalh import promptfoo``: a promptfoo config (``promptfooconfig.yaml``) as an evalh eval."""

from evalh_pipeline.importers.promptfoo.importer import ImportedEval, import_promptfoo

__all__ = ["ImportedEval", "import_promptfoo"]
