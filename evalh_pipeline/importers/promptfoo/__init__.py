"""``evalh import promptfoo``: a promptfoo config (``promptfooconfig.yaml``) as an evalh eval."""

from evalh_pipeline.importers.promptfoo.importer import PromptfooImportError, import_promptfoo, write_import
from evalh_pipeline.importers.promptfoo.report import Finding, ImportReport

__all__ = ["Finding", "ImportReport", "PromptfooImportError", "import_promptfoo", "write_import"]
