"""Fixtures of the Python API's tests. Run by `make check` through scripts/pytest.sh (Debian's
/usr/bin/python3 -m pytest python/tests) with REPRISE_BIN, REPRISE_BUILD and REPRISE_SRC set;
by hand: REPRISE_BUILD=build/default /usr/bin/python3 -m pytest python/tests."""

import os
import shutil
import subprocess
import sys

import pytest

SRC = os.environ.get("REPRISE_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BUILD = os.environ.get("REPRISE_BUILD") or os.path.join(SRC, "build", "default")
BIN = os.environ.get("REPRISE_BIN") or os.path.join(BUILD, "reprise")
sys.path.insert(0, os.path.join(SRC, "python"))
os.environ.setdefault("REPRISE_BUILD", BUILD)


def run(*args, cwd=None, check=True, env=None):
    """Runs the CLI; returns (exit status, stdout, stderr)."""
    e = dict(os.environ, LP_NUM_THREADS="4")
    e.update(env or {})
    p = subprocess.run([BIN] + [str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                       env=e)
    if check and p.returncode != 0:
        raise AssertionError("reprise %s: exit %d\n%s" % (" ".join(map(str, args)),
                                                          p.returncode, p.stderr))
    return p.returncode, p.stdout, p.stderr


def golden(*parts):
    return os.path.join(SRC, "tests", "data", "format", *parts)


def vulkan_or_skip(prog):
    exe = os.path.join(BUILD, "tests", "vk", prog)
    if not os.access(exe, os.X_OK) or not os.access(BIN, os.X_OK):
        pytest.skip("%s or %s not built" % (exe, BIN))
    rc, out, err = run("devices", check=False)
    if rc != 0 or "vulkan" not in out.lower():
        pytest.skip("no Vulkan device: %s" % (err.strip() or out.strip()))
    return exe


@pytest.fixture(scope="session")
def vk_dir(tmp_path_factory):
    """Captures of tests/vk programs (with --digests) made once: vk_compute.sbt, racy.sbt
    (a dispatch with a cross-workgroup race) with `reprise check --runs 3 --json` of it kept
    in racy.json and racy-runs/."""
    d = tmp_path_factory.mktemp("vk")
    for prog in ("vk_compute", "racy"):
        exe = vulkan_or_skip(prog)
        run("capture", "--digests", "-o", d / (prog + ".sbt"), "--", exe, cwd=d)
    rc, out, err = run("check", "racy.sbt", "--runs", "3", "--keep", "racy-runs", "--json",
                       "racy.json", cwd=d, check=False)
    assert rc in (0, 1), err
    return d


@pytest.fixture(scope="session")
def gen_trace(tmp_path_factory):
    """`reprise gen` with digests, 20000 ops in small chunks (many chunks to cross)."""
    d = tmp_path_factory.mktemp("gen")
    p = d / "g.sbt"
    run("gen", "-o", p, "--ops", "20000", "--seed", "3", "--digests", "--chunk-ops", "1000")
    return p


@pytest.fixture
def scratch(tmp_path):
    return tmp_path


def copy(src, dst):
    shutil.copyfile(src, dst)
    return dst
