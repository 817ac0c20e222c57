"""Workspaces: where systems under test change files, and how those changes become artifacts."""
