"""What every layer of the engine uses: pricing, masking, field paths and templates, TLS, processes.

The bottom layer above ``models``: it imports nothing else of evalh_pipeline, so any
package may import it without a cycle (see the import contracts in pyproject.toml).
"""
