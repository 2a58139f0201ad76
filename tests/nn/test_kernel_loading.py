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


@pytest.fixture
def extensions_dir(tmp_path, monkeypatch):
    """An empty torch extension cache: every kernel is still to be built."""
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    return tmp_path / "ext"


def test_the_build_runs_the_pinned_ninja_whatever_ninja_is_first_on_path(
    fresh_state, extensions_dir, tmp_path, monkeypatch
):
    """The build runs the ninja pinned beside torch (``ninja.BIN_DIR``), not a ninja first on PATH,
    and PATH is as it was afterwards: ninja 1.11 and 1.13 hash a command differently in .ninja_log,
    so a build with one and a load with the other would rebuild the kernel whenever PATH changed."""
    import shutil

    import ninja

    other = tmp_path / "bin"
    other.mkdir()
    (other / "ninja").write_text("#!/bin/sh\necho 1.11.1\n")
    (other / "ninja").chmod(0o755)
    monkeypatch.setenv("PATH", f"{other}:{__import__('os').environ['PATH']}")
    seen = []
    monkeypatch.setattr(torch.utils.cpp_extension, "load", lambda **_: seen.append(shutil.which("ninja")) or object())
    assert kernels.recurrence_kernel() is not None
    assert seen == [str(__import__("pathlib").Path(ninja.BIN_DIR) / "ninja")]
    assert shutil.which("ninja") == str(other / "ninja")  # PATH restored afterwards


def test_a_build_says_so_in_one_line_and_a_built_kernel_says_nothing(fresh_state, extensions_dir, monkeypatch):
    lines = []
    monkeypatch.setattr(kernels, "announce", lines.append)
    built = []

    def load(name, **_):
        build = kernels._build_dir(name)
        (build / f"{name}.so").write_bytes(b"")  # what a build leaves: the library, and a
        (build / "build.ninja").write_text("")  # ninja file with nothing left to do
        built.append(name)
        return object()

    monkeypatch.setattr(torch.utils.cpp_extension, "load", load)
    kernels.recurrence_kernel()
    assert len(lines) == 1 and lines[0].startswith("lnbench: building the C++ recurrence kernel")
    monkeypatch.setitem(kernels._state, "recurrence", {"tried": False, "module": None})  # a new process
    kernels.recurrence_kernel()
    assert len(lines) == 1 and len(built) == 2
    # a build that ninja would redo (here: a rule whose output is missing) is announced too
    (build := kernels._build_dir(built[0])).joinpath("build.ninja").write_text(
        "rule touch\n  command = touch $out\nbuild x.o: touch\n"
    )
    monkeypatch.setitem(kernels._state, "recurrence", {"tried": False, "module": None})
    kernels.recurrence_kernel()
    assert len(lines) == 2 and build.is_dir()


def test_a_stale_torch_lock_left_by_a_killed_build_is_removed_under_lnbenchs_flock(
    fresh_state, extensions_dir, monkeypatch
):
    """torch's FileBaton waits forever on a 'lock' file a killed build left; lnbench holds a flock
    (released when a process dies) while it builds, so a 'lock' found under it is stale."""
    name = kernels._builds("recurrence")[0][0]
    build = kernels._build_dir(name)
    (build / "lock").write_text("")
    seen = []
    monkeypatch.setattr(torch.utils.cpp_extension, "load", lambda **_: seen.append((build / "lock").exists()) or 1)
    kernels.recurrence_kernel()
    assert seen == [False]


def test_an_interrupted_build_stops_the_compilers_it_started(fresh_state, extensions_dir, monkeypatch):
    import subprocess

    children = []

    def load(**_):
        children.append(subprocess.Popen(["sleep", "300"]))  # a compiler torch's ninja started
        raise KeyboardInterrupt

    monkeypatch.setattr(torch.utils.cpp_extension, "load", load)
    with pytest.raises(KeyboardInterrupt):
        kernels.recurrence_kernel()
    assert children[0].wait(timeout=30) != 0  # terminated, not left compiling


def test_ctrl_c_in_python_m_lnbench_nn_kernels_ends_in_one_line_and_exit_130(fresh_state, monkeypatch, capsys):
    def load(**_):
        raise KeyboardInterrupt

    monkeypatch.setattr(torch.utils.cpp_extension, "load", load)
    monkeypatch.setitem(kernels._state, "layernorm", {"tried": False, "module": None})
    assert kernels.main() == 130
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1] == "lnbench: the kernel build was interrupted; the next run builds it again"
    # before it at most the build's own "building ..." line (where this install has no build yet)
    assert len(lines) <= 2 and all(line.startswith("lnbench: ") for line in lines), lines
