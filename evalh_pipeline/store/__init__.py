"""The run directory: writing, reading, migration."""
