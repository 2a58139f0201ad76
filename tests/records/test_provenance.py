"""Where the code of a run came from: ``git_state`` against git's own plain output
and SHA-256 computed by hand, in a checkout whose git config would colour the diff or hand it to
an external diff tool, and what it records when git is absent, fails or hangs. And the machine
that ran it: run.json's ``cpu`` and ``torch_build`` against /proc/cpuinfo and torch
read here, and nulls when they cannot be read."""

import hashlib
import json
import os
import platform
import re
import subprocess
import sys

import pytest
import torch

from lnbench.records import provenance
from lnbench.records.runs import Run

UNKNOWN = {"git_commit": None, "git_dirty": None, "git_diff_sha256": None, "git_changed_files": []}


def git(repo, *args, env=None):
    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false", *args]
    return subprocess.run(cmd, cwd=repo, check=True, capture_output=True, env=env).stdout


@pytest.fixture
def repo(tmp_path):
    """A checkout with one commit: pkg/a.py, data.bin (binary) and a .gitignore of runs/."""
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "pkg" / "a.py").write_text("x = 1\n")
    (repo / "data.bin").write_bytes(b"\x00\x01\x02")
    (repo / ".gitignore").write_text("runs/\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    return repo


def test_the_diff_hash_is_sha256_of_the_plain_binary_diff_then_each_new_files_path_and_content(repo):
    head = git(repo, "rev-parse", "HEAD").decode().strip()
    (repo / "pkg" / "a.py").write_text("x = 2\n")  # changed, not staged
    (repo / "data.bin").write_bytes(b"\x00\x01\x03")  # changed and staged: still a change from HEAD
    git(repo, "add", "data.bin")
    (repo / "pkg" / "new.py").write_text("y = 1\n")
    (repo / "z.txt").write_text("zz\n")  # outside the folder asked about: part of the checkout too
    (repo / "runs").mkdir()
    (repo / "runs" / "out.json").write_text("{}\n")  # ignored: not a change
    plain = git(repo, "diff", "HEAD", "--binary")  # what git prints without colour or an external tool
    assert b"GIT binary patch" in plain and b"+x = 2" in plain
    # a user's config may colour every diff and hand it to an external tool: the record ignores both
    tool = repo.parent / "tool.sh"
    tool.write_text("#!/bin/sh\necho EXTERNAL\n")
    tool.chmod(0o755)
    git(repo, "config", "color.ui", "always")
    git(repo, "config", "diff.external", str(tool))
    assert git(repo, "diff", "HEAD", "--binary") != plain

    state = provenance.git_state(repo / "pkg")  # from a subfolder: paths are from the checkout's root
    expected = hashlib.sha256(plain + b"\0pkg/new.py\0y = 1\n" + b"\0z.txt\0zz\n").hexdigest()
    assert state == {
        "git_commit": head,
        "git_dirty": True,
        "git_diff_sha256": expected,
        "git_changed_files": ["data.bin", "pkg/a.py", "pkg/new.py", "z.txt"],
    }


def test_only_new_files_and_names_that_are_not_utf8(repo):
    (repo / "pkg" / "new.py").write_text("y = 1\n")
    state = provenance.git_state(repo)
    assert state["git_changed_files"] == ["pkg/new.py"] and state["git_dirty"] is True
    assert state["git_diff_sha256"] == hashlib.sha256(b"\0pkg/new.py\0y = 1\n").hexdigest()  # no tracked diff
    os.remove(repo / "pkg" / "new.py")
    # a tracked and a new file whose names are not UTF-8: named with U+FFFD; the new one's content
    # cannot be read under that name, so its path alone enters the hash
    tracked = os.path.join(os.fsencode(repo), b"t\xff.bin")
    with open(tracked, "wb") as f:
        f.write(b"1")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "two")
    with open(tracked, "wb") as f:
        f.write(b"2")
    with open(os.path.join(os.fsencode(repo), b"n\xfe.dat"), "wb") as f:
        f.write(b"new")
    plain = git(repo, "diff", "HEAD", "--binary")
    state = provenance.git_state(repo)
    assert state["git_changed_files"] == ["n\ufffd.dat", "t\ufffd.bin"]
    assert state["git_diff_sha256"] == hashlib.sha256(plain + b"\0n\xef\xbf\xbd.dat\0").hexdigest()


def test_a_clean_checkout_has_its_commit_and_no_changes(repo):
    head = git(repo, "rev-parse", "HEAD").decode().strip()
    (repo / "runs").mkdir()
    (repo / "runs" / "out.json").write_text("{}\n")  # ignored
    state = provenance.git_state(str(repo / "pkg"))  # a str is a folder too
    assert state == {"git_commit": head, "git_dirty": False, "git_diff_sha256": None, "git_changed_files": []}


def test_run_folders_written_inside_the_checkout_are_not_changes_to_its_code(repo):
    """A run folder (a folder holding a run.json, and everything under it: a nested child run's
    weights too) outside the git-ignored runs/ is lnbench's output, not code: the checkout stays
    clean; a new file beside it, outside any run folder, still makes it dirty (oracle: git's list)."""
    head = git(repo, "rev-parse", "HEAD").decode().strip()
    run = repo / "results" / "20261207T000000_compare"
    (run / "child").mkdir(parents=True)
    (run / "run.json").write_text("{}\n")
    (run / "child" / "run.json").write_text("{}\n")
    (run / "child" / "model.pt").write_bytes(b"weights")
    (run / "loss.png").write_bytes(b"png")
    clean = {"git_commit": head, "git_dirty": False, "git_diff_sha256": None, "git_changed_files": []}
    assert provenance.git_state(repo) == clean
    (repo / "results" / "notes.py").write_text("y = 2\n")
    state = provenance.git_state(repo)
    assert state["git_dirty"] and state["git_changed_files"] == ["results/notes.py"]


def test_without_git_or_when_git_hangs_the_provenance_is_unknown(repo, monkeypatch):
    monkeypatch.setenv("PATH", str(repo))  # no git here
    assert provenance.git_state(repo) == UNKNOWN
    monkeypatch.undo()
    calls = []

    def hangs(cmd, **kwargs):
        calls.append((cmd, kwargs))
        raise subprocess.TimeoutExpired(cmd, kwargs["timeout"])

    monkeypatch.setattr(provenance.subprocess, "run", hangs)
    assert provenance.git_state(repo) == UNKNOWN
    assert calls == [(["git", "rev-parse", "HEAD"], {"cwd": repo, "capture_output": True, "timeout": 5})]


@pytest.mark.parametrize("fails", ["--show-toplevel", "--binary", "--name-only", "ls-files"])
def test_any_git_command_that_fails_leaves_the_provenance_unknown(repo, monkeypatch, fails):
    (repo / "pkg" / "a.py").write_text("x = 2\n")
    run = subprocess.run

    def one_fails(cmd, **kwargs):
        return run(["git", "no-such-command"] if fails in cmd else cmd, **kwargs)

    monkeypatch.setattr(provenance.subprocess, "run", one_fails)
    assert provenance.git_state(repo) == UNKNOWN


KNOWN_ISA = {"sse4_1", "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni"}
KNOWN_ISA |= {"avx512_bf16", "amx_tile", "amx_bf16", "asimd", "sve", "sve2"}  # the last three: aarch64


def cpuinfo_line(key):
    """The value of the first ``key`` line of /proc/cpuinfo, read here by hand (None without it)."""
    try:
        with open("/proc/cpuinfo") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    return next((line.split(":", 1)[1].strip() for line in lines if line.split(":")[0].strip() == key), None)


@pytest.fixture
def fresh_machine_caches():
    provenance.cpu_info.cache_clear(), provenance.torch_build.cache_clear()
    yield
    provenance.cpu_info.cache_clear(), provenance.torch_build.cache_clear()


def test_run_json_names_the_cpu_and_the_torch_build(tmp_path, fresh_machine_caches):
    with Run(tmp_path, "one", None, 0, "train") as run:
        pass
    m = json.loads((run.path / "run.json").read_text())
    cpu, build = m["cpu"], m["torch_build"]
    assert list(cpu) == ["model", "isa", "torch_capability", "count"]
    assert list(build) == ["blas", "lapack", "mkldnn", "parallel"]
    if sys.platform == "linux" and platform.machine() == "x86_64":
        assert cpu["model"] == cpuinfo_line("model name") and cpu["model"]
    flags = cpuinfo_line("flags") or cpuinfo_line("Features")
    if flags is not None:
        present = KNOWN_ISA & set(flags.split())
        assert set(cpu["isa"]) <= KNOWN_ISA and set(cpu["isa"]) == present and cpu["isa"] == sorted(present)
        if platform.machine() == "x86_64":
            assert {"sse4_1", "sse4_2"} <= set(cpu["isa"])  # every x86-64 torch runs on has them
    assert cpu["torch_capability"] == torch.backends.cpu.get_cpu_capability() and cpu["count"] == os.cpu_count()
    show = torch.__config__.show()
    assert build["blas"] == re.search(r"BLAS_INFO=(\w+)", show).group(1)
    assert build["lapack"] == re.search(r"LAPACK_INFO=(\w+)", show).group(1)
    assert build["mkldnn"] is torch.backends.mkldnn.is_available()
    backend = re.search(r"ATen parallel backend: (.+)", torch.__config__.parallel_info()).group(1).strip()
    assert build["parallel"] == backend and backend in ("OpenMP", "native thread pool", "TBB")
    assert provenance.cpu_info() is provenance.cpu_info()  # computed once per process


def test_without_cpuinfo_or_torch_the_machine_fields_are_null(tmp_path, monkeypatch, fresh_machine_caches):
    monkeypatch.setattr(provenance, "_CPUINFO", str(tmp_path / "no-such-file"))
    monkeypatch.setattr(provenance.platform, "processor", lambda: "")
    assert provenance.cpu_info()["model"] is None and provenance.cpu_info()["isa"] is None
    provenance.cpu_info.cache_clear()

    def fails(*args, **kwargs):
        raise RuntimeError("no")

    monkeypatch.setattr(provenance.platform, "processor", fails)
    monkeypatch.setattr(provenance.os, "cpu_count", fails)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", fails)
    monkeypatch.setattr(torch.__config__, "show", fails)
    monkeypatch.setattr(torch.__config__, "parallel_info", fails)
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", fails)
    assert provenance.cpu_info() == {"model": None, "isa": None, "torch_capability": None, "count": None}
    assert provenance.torch_build() == {"blas": None, "lapack": None, "mkldnn": None, "parallel": None}
    provenance.torch_build.cache_clear()
    monkeypatch.setitem(sys.modules, "torch", None)  # torch cannot be imported
    assert provenance.torch_build() == {"blas": None, "lapack": None, "mkldnn": None, "parallel": None}
    with Run(tmp_path, "one", None, 0, "train") as run:
        pass
    m = json.loads((run.path / "run.json").read_text())
    assert m["cpu"]["isa"] is None and m["torch_build"]["blas"] is None


def test_a_cpuinfo_without_the_lines_or_with_an_empty_flags_line(tmp_path, monkeypatch, fresh_machine_caches):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t:\n\nprocessor\t: 1\nmodel name\t: Later CPU\nflags\t: avx2\n")
    monkeypatch.setattr(provenance, "_CPUINFO", str(info))
    monkeypatch.setattr(provenance.platform, "processor", lambda: "x86_64")
    cpu = provenance.cpu_info()
    assert cpu["model"] == "Later CPU" and cpu["isa"] == []  # the first CPU's flags: none of the known
    provenance.cpu_info.cache_clear()
    info.write_text("Features\t: fp asimd evtstrm sve sve2 sha3\n")  # aarch64
    assert provenance.cpu_info()["isa"] == ["asimd", "sve", "sve2"] and provenance.cpu_info()["model"] == "x86_64"


@pytest.mark.parametrize(("env", "kernels"), [(None, True), ("1", True), ("0", False)])
def test_run_json_says_whether_the_cpp_kernels_were_allowed(tmp_path, monkeypatch, env, kernels):
    """LNBENCH_KERNELS=0 runs the step-by-step Python code, whose float32 numbers differ in their
    last digits from the fused kernel's: the manifest records which."""
    if env is None:
        monkeypatch.delenv("LNBENCH_KERNELS", raising=False)
    else:
        monkeypatch.setenv("LNBENCH_KERNELS", env)
    with Run(tmp_path, "one", None, 0, "train") as run:
        pass
    assert json.loads((run.path / "run.json").read_text())["kernels"] is kernels


def _git(repo, *args):
    import subprocess

    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false", *args]
    return subprocess.run(cmd, cwd=repo, check=True, capture_output=True).stdout


def test_run_json_records_a_checkout_with_uncommitted_changes_as_dirty(tmp_path, monkeypatch):
    """The commit, ``git_dirty``, a hash of the diff and the changed files (MLflow
    and Sacred record a dirty flag); the hash of a tracked change is SHA-256 of ``git diff HEAD --binary``."""
    import hashlib

    from lnbench.records import provenance, runs

    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "pkg" / "a.py").write_text("x = 1\n")
    (repo / ".gitignore").write_text("runs/\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "one")
    head = _git(repo, "rev-parse", "HEAD").decode().strip()
    (repo / "runs").mkdir()  # ignored: not a change
    clean = provenance.git_state(repo / "pkg")
    assert clean == {"git_commit": head, "git_dirty": False, "git_diff_sha256": None, "git_changed_files": []}

    (repo / "pkg" / "a.py").write_text("x = 2\n")
    tracked_only = provenance.git_state(repo / "pkg")
    assert tracked_only["git_diff_sha256"] == hashlib.sha256(_git(repo, "diff", "HEAD", "--binary")).hexdigest()
    (repo / "pkg" / "new.py").write_text("y = 1\n")
    monkeypatch.setattr(runs, "_git_state_of_lnbench", lambda: provenance.git_state(repo / "pkg"))
    with Run(tmp_path / "runs", "dirty", None, 0, "train") as run:
        pass
    m = json.loads((run.path / "run.json").read_text())
    assert m["git_commit"] == head and m["git_dirty"] is True
    assert m["git_changed_files"] == ["pkg/a.py", "pkg/new.py"]
    assert len(m["git_diff_sha256"]) == 64 and m["git_diff_sha256"] != tracked_only["git_diff_sha256"]
    (repo / "pkg" / "new.py").write_text("y = 2\n")  # another content of the new file: another hash
    assert provenance.git_state(repo)["git_diff_sha256"] != m["git_diff_sha256"]
    (repo / "pkg" / "new.py").write_text("y = 1\n")
    assert provenance.git_state(repo)["git_diff_sha256"] == m["git_diff_sha256"]  # the same changes: the same hash


def test_outside_a_checkout_the_provenance_is_unknown(tmp_path, monkeypatch):
    from lnbench.records.provenance import git_state

    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # git looks no higher than tmp_path
    state = git_state(tmp_path)
    assert state == {"git_commit": None, "git_dirty": None, "git_diff_sha256": None, "git_changed_files": []}
