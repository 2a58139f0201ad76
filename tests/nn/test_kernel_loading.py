"""lnbench.nn.kernels' loading: a signal during the build or torch's cpp_extension import is the
user's interrupt (the run is "interrupted", not "failed"), and a failed build falls back with one warning."""

import pytest
import torch.utils.cpp_extension

from lnbench.nn import kernels


@pytest.fixture
def fresh_state(monkeypatch):
    monkeypatch.setenv("LNBENCH_KERNELS", "1")
    monkeypatch.setitem(kernels._state, "recurrence", {"tried": False, "module": None})


def test_an_interrupt_wrapped_by_python_in_a_runtime_error_stays_an_interrupt(fresh_state, monkeypatch):
    """Python 3.11 wraps an exception raised in __set_name__ (setuptools' Extension, imported by
    cpp_extension) in a RuntimeError: a SIGTERM there marked a compare's LSTM cells "failed"."""

    def load(**_):
        try:
            raise KeyboardInterrupt("SIGTERM")
        except KeyboardInterrupt as exc:
            raise RuntimeError("Error calling __set_name__ on 'Field' instance 'include_dirs' in 'Extension'") from exc

    monkeypatch.setattr(torch.utils.cpp_extension, "load", load)
    with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
        kernels.recurrence_kernel()
    assert kernels._state["recurrence"]["tried"] is False  # a later call tries again


def test_a_failed_build_falls_back_with_one_warning(fresh_state, monkeypatch):
    def load(**_):
        raise OSError("no compiler")

    monkeypatch.setattr(torch.utils.cpp_extension, "load", load)
    with pytest.warns(RuntimeWarning, match="recurrence kernel .* not available .*no compiler"):
        assert kernels.recurrence_kernel() is None
    assert kernels.recurrence_kernel() is None  # tried once: no second warning, no second build
