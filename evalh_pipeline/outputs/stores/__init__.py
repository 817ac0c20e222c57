"""Trace stores: where a run's records go besides its run directory (``output[]``).

The run directory stays the engine's working surface; each store takes a copy of the
run's records after every stage (:mod:`.sync`) and can hand a run back as a run
directory for the read-only commands (:mod:`.reading`).
"""
