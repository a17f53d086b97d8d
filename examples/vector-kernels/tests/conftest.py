import numpy as np
import pytest


@pytest.fixture
def rng() -> np.random.Generator:
    """One generator for all inputs of a test, as the host programs use."""
    return np.random.default_rng(42)
