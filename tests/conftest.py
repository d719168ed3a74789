"""Shared fixtures. The BFCL package is fetched once (pinned, --no-deps) into the repo's resources/."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESOURCES = ROOT / "resources"
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def bfcl_data():
    from prefix_audit.benchmarks.bfcl import load_data

    return load_data(RESOURCES)


@pytest.fixture(scope="session")
def bfcl(bfcl_data):
    from prefix_audit.benchmarks.bfcl import BfclBenchmark

    return BfclBenchmark(bfcl_data)
