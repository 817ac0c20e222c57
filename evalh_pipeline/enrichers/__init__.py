"""TraceEnrichers: post-capture steps that add to a trace before it is persisted and judged."""
