"""Everything ``output[]`` names, in one package.

- the canonical run folder and its mirrors (``local_files`` folders and URLs):
  :mod:`.publishing`;
- trace stores (``sqlite``, ``postgres``, ``otel``, plugins) that take a copy of the run's
  records after every stage: :mod:`.stores`;
- sinks (``webhook``) that receive the finished run's view, its summary and its drift:
  :mod:`.sinks`, :mod:`.view`, :mod:`.webhook`;
- one registry of the YAML type names (:mod:`.registry`), one sync after each stage
  (:mod:`.sync`) and one failure journal, the run's ``publish.jsonl`` (:mod:`.journal`).

Layer: above ``queries/`` (a sink's view holds the drift, computed by ``queries/``), below
``runner/`` (which loads the eval with this registry and annotates traces for the stores).
"""
