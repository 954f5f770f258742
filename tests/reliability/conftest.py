"""Fixtures shared by the reliability tests."""
import pytest
import torch


@pytest.fixture
def one_thread():
    """One torch thread for the test (thousands of tiny ops, CRF and CKY loops: with 2 threads on a busy machine
    each waits for a straggler), put back after."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
