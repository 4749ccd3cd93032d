"""Shared fixtures of the profiling tests: the repository on sys.path, the fixture folders."""
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "python" / "fixtures"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture
def fixtures():
    return FIXTURES


@pytest.fixture
def root():
    return ROOT
