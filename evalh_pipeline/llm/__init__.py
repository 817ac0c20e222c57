"""Chat backends: one module per provider protocol, used by judges, systems and graders.

Engine code: no Dagster here. Below systems/, evaluators/ and judges/, above store/,
config/ and common/ (../shared/design/layers.md):

- :mod:`evalh_pipeline.llm.settings`: where a backend calls (base URL, key from the
  environment, model, limits);
- :mod:`evalh_pipeline.llm.chat`: the backend contract (one system + user prompt in, one
  text reply with its usage out), its errors and the HTTP call;
- :mod:`evalh_pipeline.llm.openai_chat`: the OpenAI-compatible chat-completions protocol
  (the judge backend, the grading call of the OpenAI Evals and promptfoo graders, where the
  answer and usage sit in a response);
- :mod:`evalh_pipeline.llm.anthropic_messages`: the Anthropic messages protocol;
- :mod:`evalh_pipeline.llm.registry`: a backend name or model name -> the backend class
  (plugins register under the entry point group ``evalh_pipeline.judges``).
"""
