"""How the suite shares out its work: under ``--dist loadgroup`` (``make test``) every test
that shares the one ingest of the real corpus runs in one worker, so the corpus is ingested
once per run (tests/conftest.py), not once per worker."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.realdata


@pytest.mark.usefixtures("real_store_path")  # a test of the shared real corpus
def test_a_test_of_the_shared_real_corpus_is_in_its_group(request: pytest.FixtureRequest) -> None:
    if not request.config.getoption("loadgroup", False):
        pytest.skip("only under pytest-xdist's --dist loadgroup (make test)")
    # xdist's worker renames the test for its group; the scheduler keeps a group together
    assert request.node.nodeid.endswith("@realdata"), request.node.nodeid
