"""The openai/evals registry the importer's tests read: the real one, from the ``evals`` wheel
(tests/support/openai_evals_wheel.py), and the parity fixtures written here."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.openai_evals_wheel import MISSING, WHEEL, WheelRegistry

OURS = Path(__file__).parent / "registry"  # evals/parity.yaml and data/parity/: written here


@pytest.fixture(scope="session")
def wheel_registry(tmp_path_factory: pytest.TempPathFactory) -> WheelRegistry:
    """openai/evals' registry as the pinned ``evals`` wheel ships it (extracted once a session)."""
    if not WHEEL.is_file():
        pytest.skip(MISSING)
    return WheelRegistry(WHEEL, tmp_path_factory.mktemp("openai-evals-registry"))


@pytest.fixture(scope="session")
def parity_registry(wheel_registry: WheelRegistry, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A registry of the parity evals written here, with the wheel's model-graded specs beside
    them (closedqa, fact) as in openai/evals' own registry."""
    root = tmp_path_factory.mktemp("parity-registry")
    shutil.copytree(OURS / "evals", root / "evals")
    shutil.copytree(OURS / "data", root / "data")
    shutil.copytree(wheel_registry.root / "modelgraded", root / "modelgraded")
    return root
