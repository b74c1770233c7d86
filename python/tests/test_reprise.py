"""Tests of the Python API (python/reprise) against the CLI and the C library: every table,
ops and their ranges, a real Vulkan capture's ops against `reprise view`, analyses against
`reprise analyze --json` and the dry run, check results against `reprise check --json`,
corrupt files, jobs, kinds of trace, running without NumPy/pandas, and `make install`."""

import ctypes
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import BUILD, SRC, copy, golden, run, vulkan_or_skip

import reprise

# ---- tables ------------------------------------------------------------------------------------


def info_sections(path):
    """`reprise info`'s text: {section: [lines]}."""
    _, out, _ = run("info", path)
    sec, cur = {}, None
    for line in out.splitlines():
        if line and not line.startswith(" "):
            cur = line.split()[0]
            sec[cur] = [line]
        elif cur:
            sec[cur].append(line)
    return sec


@pytest.mark.parametrize("name", ["gen-600.sbt", "v1-gen-600.sbt", "trimmed-state.sbt",
                                  "torn-tail.sbt"])
def test_every_table_as_info_lists_it(name):
    path = golden("good", name)
    t = reprise.open(path)
    sec = info_sections(path)
    # devices: "  1  NAME api vendor 0x.. device 0x.."
    devs = t.devices()
    assert len(devs) == int(sec["devices"][0].split()[1])
    for line, d in zip(sec["devices"][1:], devs.itertuples()):
        assert line.split()[0] == str(d.id)
        assert d.name in line and d.api in line
        assert "vendor 0x%04x" % d.vendor_id in line
    streams = t.streams()
    assert len(streams) == int(sec["streams"][0].split()[1])
    for line, s in zip(sec["streams"][1:], streams.itertuples()):
        assert line.split()[0] == str(s.id) and s.kind in line and "device %d" % s.device in line
        assert "handle 0x%x" % s.handle in line
    assert len(t.programs()) == int(sec["programs"][0].split()[1])
    assert len(t.kernels()) == int(sec["kernels"][0].split()[1])
    # metadata: key value per line, in file order
    meta = t.metadata()
    lines = [ln.split(None, 1) for ln in sec.get("metadata", [""])[1:]]
    assert [k for k, _ in lines] == list(meta["key"])
    assert [v.strip() for _, v in lines] == [v.strip() for v in meta["value"]]
    # op counts by kind against the ops themselves
    ops = t.ops(columns=["kind_name"])
    counts = dict(re.findall(r"(\w+)=(\d+)", sec["op"][0]))
    have = {k: v for k, v in ops["kind_name"].value_counts().to_dict().items() if v}
    assert {k: int(v) for k, v in counts.items()} == have
    # completeness
    c = t.completeness()
    assert c["complete"] == sec["complete"][0].split()[1].startswith("yes")
    assert c["has_footer"] == ("footer index present" in sec["format"][0])
    if not c["complete"]:
        assert c["why"] and c["why"] in " ".join(sec["complete"])
    assert len(t) == t.info["n_ops"] == len(ops)


def test_tables_records_and_kernels_resolve(gen_trace):
    t = reprise.open(gen_trace)
    progs = {p["id"]: p for p in t.programs(format="records")}
    for k in t.kernels(format="records"):
        assert k["program"] in progs and k["name"]
    assert t.kind == "synthetic"
    chunks = t.chunks()
    assert chunks["n_ops"].sum() == len(t)


# ---- ops ---------------------------------------------------------------------------------------


def test_ops_every_column_and_format(gen_trace):
    t = reprise.open(gen_trace)
    cols = [c for c in reprise.COLUMNS]
    a = t.ops(columns=cols, format="numpy")
    n = len(t)
    assert all(len(a[c]) == n for c in cols)
    assert list(a["seq"]) == list(range(n))
    assert a["grid"].shape == (n, 3) and a["digest"].shape == (n, 2)
    # fields follow their flags: device times only with SBT_OPF_DEV_TIME, kernels on launches
    dev = (a["flags"] & 1) != 0
    assert (a["dev_end"][~dev] == 0).all() and (a["dev_end"][dev] >= a["dev_begin"][dev]).all()
    assert (a["host_end"] >= a["host_begin"]).all()
    k = a["kind"] == 1
    assert (a["kernel"][k] > 0).all() and (a["kernel"][~k] == 0).all()
    assert set(a["kind_name"][k]) == {"kernel"}
    # the same through array.array and the DataFrame
    arr = t.ops(columns=["seq", "dev_end", "grid"], format="arrays")
    assert list(arr["dev_end"]) == list(a["dev_end"])
    assert list(arr["grid"]) == list(a["grid"].reshape(-1))
    df = t.ops(columns=cols)
    assert (df["grid_y"].values == a["grid"][:, 1]).all()
    assert (df["digest_hi"].values == a["digest"][:, 1]).all()
    assert (df["dev_begin"].values == a["dev_begin"]).all()
    # a digest as the CLI prints it (the first 16 hex digits of lo)
    _, out, _ = run("view", gen_trace, "--ops", "0:200", "--limit", "0")
    shown = dict(re.findall(r"^\s*(\d+) .* digest ([0-9a-f]{16})", out, re.M))
    assert shown
    for seq, d in shown.items():
        lo, hi = (int(x) for x in a["digest"][int(seq)])
        assert d == reprise._lib.Hash(lo, hi).hex()[:16]


def test_ops_frame_shares_the_arrays(gen_trace):
    df = reprise.open(gen_trace).ops()
    assert list(df.columns) == reprise.DEFAULT_COLUMNS
    assert str(df["kind"].dtype) == "uint8" and str(df["host_begin"].dtype) == "uint64"
    # no copy into consolidated blocks: one block per column
    assert df._mgr.nblocks == len(df.columns)


def spans(a):
    b = np.where(a["flags"] & 1, np.minimum(a["host_begin"], a["dev_begin"]), a["host_begin"])
    e = np.where(a["flags"] & 1, np.maximum(a["host_end"], a["dev_end"]), a["host_end"])
    return b, e


def test_ranges_equal_brute_force(gen_trace):
    t = reprise.open(gen_trace)
    cols = ["seq", "stream", "flags", "host_begin", "host_end", "dev_begin", "dev_end"]
    a = t.ops(columns=cols, format="numpy")
    b, e = spans(a)
    t0 = t.info["t_min"]
    rnd = np.random.default_rng(7)
    for trial in range(40):
        s0 = int(rnd.integers(0, 21000))
        s1 = s0 + int(rnd.integers(0, 5000))
        ta = int(rnd.integers(0, t.info["t_max"] - t0))
        tb = ta + int(rnd.integers(0, (t.info["t_max"] - t0) // 4))
        stream = int(rnd.integers(1, 9)) if trial % 3 == 0 else None
        kw = {}
        want = np.ones(len(a["seq"]), bool)
        if trial % 2 == 0:
            kw["range"] = (s0, s1)
            want &= (a["seq"] >= s0) & (a["seq"] < s1)
        if trial % 4 in (1, 2):
            kw["time"] = (ta, tb)
            want &= (e >= t0 + ta) & (b < t0 + tb)
        if stream:
            kw["stream"] = stream
            want &= a["stream"] == stream
        got = t.ops(columns=cols, format="numpy", **kw)
        assert list(got["seq"]) == list(a["seq"][want]), kw
        for c in cols:
            assert (got[c] == a[c][want]).all(), (kw, c)
    # a slice, an open end, an empty range
    assert list(t.ops(range=slice(100, 105), format="numpy")["seq"]) == [100, 101, 102, 103, 104]
    assert len(t.ops(range=(19990, None), format="numpy")["seq"]) == 10
    assert len(t.ops(range=(5, 5), format="numpy")["seq"]) == 0
    with pytest.raises(ValueError):
        t.ops(range=(9, 5))
    with pytest.raises(ValueError):
        t.ops(columns=["nope"])


def test_ops_read_by_several_threads_are_the_same(gen_trace):
    t = reprise.open(gen_trace)
    cols = ["seq", "kind", "stream", "host_begin", "dev_end", "grid", "digest"]
    one = t.ops(columns=cols, format="numpy", threads=1)
    for threads in (2, 3, 7):
        for rng in (None, (0, 20000), (123, 19000), (4999, 5011)):
            got = t.ops(columns=cols, format="numpy", threads=threads, range=rng)
            sel = slice(*rng) if rng else slice(None)
            for c in cols:
                assert (got[c] == one[c][sel]).all(), (threads, rng, c)
    df = t.ops(threads=2)
    assert (df["seq"].values == one["seq"]).all() and df._mgr.nblocks == len(df.columns)


def test_ranges_as_view_selects_them(gen_trace):
    t = reprise.open(gen_trace)
    _, out, _ = run("view", gen_trace, "--time-range", "1ms:2ms", "--stream", "3", "--limit",
                    "0")
    seqs = [int(m) for m in re.findall(r"^\s*(\d+) ", out, re.M)]
    got = t.ops(time=(1000000, 2000000), stream=3, columns=["seq"], format="numpy")["seq"]
    assert seqs and list(got) == seqs


# ---- a real Vulkan capture ---------------------------------------------------------------------

UNITS = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def parse_time(s):
    v, u = s.split()
    return float(v) * UNITS[u]


def close_to(ns, shown):
    """ns printed with 3 significant digits (as the CLI prints times)."""
    want = parse_time(shown)
    return abs(ns - want) <= max(1.0, want * 0.006)


def test_vulkan_capture_ops_equal_view(vk_dir):
    path = vk_dir / "vk_compute.sbt"
    t = reprise.open(path)
    assert t.kind == "capture"
    df = t.ops(columns=["seq", "kind_name", "stream", "op_name", "flags", "host_begin",
                        "host_end", "dev_begin", "dev_end", "grid", "block"])
    _, out, _ = run("view", path, "--limit", "0")
    rows = out.splitlines()[1:]
    assert len(rows) == len(df) == t.info["n_ops"]
    t0 = t.info["t_min"]
    for line, op in zip(rows, df.itertuples()):
        m = re.match(r"\s*(\d+)\s+([\d.]+ \w+)\s+([\d.]+ \w+)\s+(\w+)\s+s(\d+)\s+(.*)", line)
        assert m, line
        seq, start, dur, kind, stream, rest = m.groups()
        assert int(seq) == op.seq and kind == op.kind_name and int(stream) == op.stream
        assert rest.startswith(op.op_name), (rest, op.op_name)
        has_dev = op.flags & 1
        begin = min(op.host_begin, op.dev_begin) if has_dev else op.host_begin
        assert close_to(begin - t0, start), (line, begin - t0)
        d = op.dev_end - op.dev_begin if has_dev else op.host_end - op.host_begin
        assert close_to(d, dur), (line, d)
        if kind == "kernel":
            assert "grid %dx%dx%d" % (op.grid_x, op.grid_y, op.grid_z) in rest


def test_job_of_a_capture_is_its_manifest(vk_dir):
    job = reprise.open(vk_dir / "racy.procs")
    procs = job.processes()
    assert len(procs) == 1 and procs["trace"][0] == str(vk_dir / "racy.sbt")
    _, out, _ = run("info", vk_dir / "racy.sbt")
    assert "pid %d" % procs["pid"][0] in out and str(procs["ppid"][0]) in out
    [tr] = job.traces()
    assert reprise.open(vk_dir / "racy.sbt").job().processes(format="records") == \
        job.processes(format="records")
    assert tr.info["fingerprint"] == reprise.open(vk_dir / "racy.sbt").info["fingerprint"]
    # a directory: its manifests, and the traces no manifest names
    d = reprise.open(vk_dir)
    names = sorted(os.path.basename(p) for p in d.processes()["trace"])
    assert "racy.sbt" in names and "vk_compute.sbt" in names


def test_job_of_several_processes(vk_dir, scratch):
    exe = os.path.join(BUILD, "tests", "vk", "vk_compute")
    run("capture", "-o", "t.sbt", "--", "sh", "-c", "%s >/dev/null; %s >/dev/null" % (exe, exe),
        cwd=scratch)
    job = reprise.open(scratch / "t.procs")
    lines = [ln.split("\t") for ln in open(scratch / "t.procs").read().splitlines()]
    procs = job.processes(format="records")
    assert len(procs) == len(lines) == 2
    assert sorted(p["pid"] for p in procs) == sorted(int(ln[0]) for ln in lines)
    for tr in job.traces():
        assert tr.kind == "capture" and len(tr) > 0


# ---- kinds of trace ----------------------------------------------------------------------------


def test_replay_results_sidecars_and_trimmed_traces(vk_dir, scratch):
    r = reprise.open(vk_dir / "racy-runs" / "run1.sbt")
    assert r.kind == "replay" and r.meta()["replay.verify"] == "op"
    cap = copy(vk_dir / "vk_compute.sbt", scratch / "c.sbt")
    run("replay", cap, "--mode", "full", "--snapshot-every", "10", "-o", scratch / "r.sbt")
    side = reprise.open(scratch / "c.snap.sbt")
    assert side.kind == "sidecar"
    st = side.states()
    assert len(st) == side.info["n_states"] > 0 and (st["allocations"] > 0).any()
    run("trim", cap, "--ops", "20:30", "-o", scratch / "s.sbt")
    tr = reprise.open(scratch / "s.sbt")
    assert tr.kind == "trimmed" and tr.info["required_features"] & 1


# ---- analyses ----------------------------------------------------------------------------------


def test_analyze_equals_the_cli(gen_trace):
    t = reprise.open(gen_trace)
    for kw, args in (({}, []), ({"range": (5000, 9000)}, ["--ops", "5000:9000"]),
                     ({"stream": 2}, ["--stream", "2"])):
        _, out, _ = run("analyze", gen_trace, "--json", "-", "--top", "0", *args)
        want = json.loads(out)["analysis"]
        a = t.analyze(**kw)
        for k in ("n_ops", "n_timed", "makespan_ns", "captured_ns", "total_busy_ns",
                  "max_concurrency", "max_concurrency_at_ns", "late_intervals"):
            assert a.summary[k] == want[k], k
        assert a.summary["mean_concurrency"] == pytest.approx(want["mean_concurrency"], abs=1e-4)
        ks = a.kernels(format="records")
        assert len(ks) == len(want["kernels"])
        for g, w in zip(ks, want["kernels"]):
            for k in ("name", "kernel", "count", "total_ns", "min_ns", "max_ns", "geometries",
                      "critical_ns"):
                assert g[k] == w[k], (k, g, w)
            assert list(g["grid"]) == w["grid"]
        crit = a.critical_path(format="records")
        assert len(crit) == len(want["critical_path"]["ops"])
        for g, w in zip(crit, want["critical_path"]["ops"]):
            assert (g["seq"], g["start_ns"], g["dur_ns"], g["stream"]) == \
                (w["seq"], w["start_ns"], w["dur_ns"], w["stream"])
        assert a.summary["crit_n_ops"] == want["critical_path"]["n_ops"]


def test_kernel_stats_equal_view_stats(gen_trace):
    t = reprise.open(gen_trace)
    ks = t.kernel_stats(format="records")
    _, out, _ = run("view", gen_trace, "--stats")
    lines = out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("kernel "))
    rows = [ln for ln in lines[head + 1:] if ln.strip()]
    assert len(rows) == len(ks)
    for line, k in zip(rows, ks):
        name, rest = line[:60].rstrip(), line[60:].split()
        assert k["name"].startswith(name[:-3] if name.endswith("...") else name), (line, k)
        assert int(rest[0]) == k["count"]
        assert close_to(k["total_ns"], rest[1] + " " + rest[2])
        assert close_to(k["min_ns"], rest[5] + " " + rest[6])
        assert close_to(k["max_ns"], rest[7] + " " + rest[8])


def test_why_equals_the_cli(gen_trace):
    t = reprise.open(gen_trace)
    for seq in (100, 5000, 19999):
        edges = t.why(seq, format="records")
        _, out, _ = run("analyze", gen_trace, "--why", str(seq))
        got = sorted((e["from"], e["description"]) for e in edges)
        want = sorted((int(a), b) for a, b in
                      re.findall(r"^\s+op (\d+) \([^)]*\):\s*(.*?)(?: on resource.*)?$", out,
                                 re.M))
        assert len(want) == int(re.search(r"waits for (\d+) op", out).group(1))
        assert got == want, out
    path = t.why(19999, 19000, format="records")
    assert path and path[-1]["to"] == 19999 and path[0]["from"] == 19000


def test_slice_and_findings_equal_the_dry_run(gen_trace, vk_dir):
    t = reprise.open(gen_trace)
    s = t.slice((12000, 12100))
    _, out, _ = run("replay", gen_trace, "--ops", "12000:12100", "--json", "-")
    want = json.loads(out)
    assert s["slice_ops"] == want["slice"]["ops"] == len(s["seqs"])
    assert s["slice_upload_bytes"] == want["slice"]["upload_bytes"]
    assert s["before_ops"] == want["before"]["ops"]
    assert (s["range_first"], s["range_last"]) == (want["range"]["first_seq"],
                                                   want["range"]["last_seq"])
    assert (s["seqs"] < 12000).all()
    # findings: a trace whose graph has some (the golden torn-tail is cut mid-way)
    for path in (golden("good", "torn-tail.sbt"), vk_dir / "racy.sbt", gen_trace):
        f = reprise.open(path).findings()
        rc, out, _ = run("replay", path, "--json", "-", check=False)
        want = json.loads(out)
        # the dry run adds one of its own: "incomplete", the trace's completeness
        wf = [w for w in want["findings"] if w["kind"] != "incomplete"]
        assert len(f) == len(wf)
        assert {k: v for k, v in f.attrs["counts"].items() if v} == \
            {k: v for k, v in want["findings_by_kind"].items() if k != "incomplete"}
        for g, w in zip(f.to_dict("records"), wf):
            assert (g["kind"], g["seq"]) == (w["kind"], w["seq"])


class Op(ctypes.Structure):  # struct sbt_op, to write a trace through the C library
    _fields_ = [("seq", ctypes.c_uint64)] + [(f, ctypes.c_uint32) for f in (
        "kind", "subkind", "flags", "stream", "thread", "name")] + [
        (f, ctypes.c_uint64) for f in ("host_begin", "host_end", "dev_begin", "dev_end")] + [
        ("kernel", ctypes.c_uint32), ("grid", ctypes.c_uint32 * 3),
        ("block", ctypes.c_uint32 * 3), ("shmem", ctypes.c_uint32)] + [
        (f, ctypes.c_uint64) for f in ("bytes", "resource", "obj", "value")] + [
        ("blob", reprise._lib.Hash), ("digest", reprise._lib.Hash), ("error", ctypes.c_uint32),
        ("n_access", ctypes.c_uint32), ("access", ctypes.POINTER(reprise._lib.Access)),
        ("payload", reprise._lib.Ext)]


def write_trace_with_findings(path):
    """A device, a stream, and: alloc r1, free r1, a kernel reading r1 (use after free), a
    second free (double free), a kernel reading r2 that nothing wrote (uninitialised read)."""
    L = reprise._lib.lib
    L.sbt_writer_open.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    L.sbt_writer_add_device.argtypes = [ctypes.c_void_p, ctypes.POINTER(reprise._lib.Device),
                                        ctypes.POINTER(ctypes.c_uint32)]
    L.sbt_writer_add_stream.argtypes = [ctypes.c_void_p, ctypes.POINTER(reprise._lib.Stream),
                                        ctypes.POINTER(ctypes.c_uint32)]
    L.sbt_writer_add_op.argtypes = [ctypes.c_void_p, ctypes.POINTER(Op),
                                    ctypes.POINTER(ctypes.c_uint64)]
    L.sbt_writer_close.argtypes = [ctypes.c_void_p]
    w, i = ctypes.c_void_p(), ctypes.c_uint32()
    assert L.sbt_writer_open(str(path).encode(), None, ctypes.byref(w)) == 0
    assert L.sbt_writer_add_device(w, reprise._lib.Device(api=1), ctypes.byref(i)) == 0
    assert L.sbt_writer_add_stream(w, reprise._lib.Stream(device=1, kind=1), ctypes.byref(i)) == 0
    acc = (reprise._lib.Access * 2)(reprise._lib.Access(1, 0, 8, 1), reprise._lib.Access(2, 0, 8, 1))
    ops = [Op(kind=5, subkind=1, flags=0x18, bytes=64, resource=1, obj=1),
           Op(kind=5, subkind=1, flags=0x18, bytes=64, resource=2, obj=1),
           Op(kind=6, flags=0x10, resource=1),
           Op(kind=1, n_access=1, access=ctypes.pointer(acc[0])),
           Op(kind=6, flags=0x10, resource=1),
           Op(kind=1, n_access=1, access=ctypes.pointer(acc[1]))]
    for k, op in enumerate(ops):
        op.stream, op.host_begin, op.host_end = 1, 1000 * k, 1000 * k + 10
        assert L.sbt_writer_add_op(w, op, None) == 0, reprise._lib.errmsg()
    assert L.sbt_writer_close(w) == 0


def test_graph_findings_equal_the_dry_run(scratch):
    path = scratch / "f.sbt"
    write_trace_with_findings(path)
    f = reprise.open(path).findings()
    rc, out, _ = run("replay", path, "--json", "-", check=False)
    want = json.loads(out)
    assert len(f) == len(want["findings"]) >= 3
    assert {k: v for k, v in f.attrs["counts"].items() if v} == want["findings_by_kind"]
    for g, w in zip(f.to_dict("records"), want["findings"]):
        assert (g["kind"], g["severity"], g["seq"], g["message"]) == \
            (w["kind"], w["severity"], w["seq"], w["message"])
    assert {"use-after-free", "double-free", "uninitialised-read"} <= set(f["kind"])


# ---- check and diff ----------------------------------------------------------------------------


def test_check_findings_equal_the_json_report(vk_dir, monkeypatch):
    want = json.load(open(vk_dir / "racy.json"))
    monkeypatch.chdir(vk_dir)  # the runs named as the CLI named them
    cap = reprise.open("racy.sbt")
    runs = want["runs"]
    r = cap.check(runs)
    rep = r.report
    for k in ("result", "verdict", "ops", "device_ops", "verified", "matched", "unverified",
              "counts", "roots", "first_divergence_located"):
        assert rep[k] == want[k], k
    f = r.findings(format="records")
    assert len(f) == len(want["findings"])
    for g, w in zip(f, want["findings"]):
        for k, v in w.items():
            assert g[k] == v, (k, g, w)
        assert g["identity"].startswith("s%d/" % w["stream"])
    if want.get("first_divergence"):
        fd = r.first_divergence
        for k, v in want["first_divergence"].items():
            assert fd[k] == v
        assert fd["identity"] == cap.identities([fd["seq"]])[fd["seq"]]
    tm = r.timing(format="records")
    assert [g["name"] for g in tm] == [k["name"] for k in want["kernels"]]
    assert [g["run_ns_median"] for g in tm] == [k["run_ns"]["median"] for k in want["kernels"]]
    assert r.verdict == want["verdict"] and r.passed == (want["verdict"] == "pass")
    # per-op verdicts: every device op once, its finding's class, else a match
    v = r.verdicts(all_ops=True, format="records")
    assert len(v) == want["device_ops"]
    assert sum(x["verdict"] == "match" for x in v) == want["matched"]
    assert {x["seq"]: x["verdict"] for x in v if x["verdict"] != "match"} == \
        {f["seq"]: f["class"] for f in want["findings"]}
    assert len(cap.check(runs, range=(0, 29)).verdicts(all_ops=True)) == \
        sum(1 for x in v if x["seq"] < 29)
    # identities as the expectations file keys ops (check --update-expect)
    rc, _, _ = run("check", vk_dir / "racy.sbt", "--results", *runs, "--expect", "e.txt",
                   "--update-expect", cwd=vk_dir, check=False)
    keyed = {}
    for line in open(vk_dir / "e.txt"):
        p = line.split()
        if p and p[0] == "op" and p[4] != "-":
            keyed[int(p[4])] = p[1]
    assert keyed
    assert cap.identities(keyed) == keyed


def test_diff_equals_the_cli(vk_dir):
    runs = vk_dir / "racy-runs"
    run("diff", runs / "run1.sbt", runs / "run2.sbt", "--json", runs / "d.json", check=False)
    want = json.load(open(runs / "d.json"))
    r = reprise.open(runs / "run1.sbt").diff(str(runs / "run2.sbt"))
    assert r.report["counts"] == want["counts"] and r.verdict == want["verdict"]
    assert [(f["seq"], f["class"]) for f in r.findings(format="records")] == \
        [(f["seq"], f["class"]) for f in want["findings"]]
    # two different programs: missing and extra ops, each with its identity (an extra op's
    # from B, the other's from A)
    a, b = reprise.open(vk_dir / "vk_compute.sbt"), reprise.open(vk_dir / "racy.sbt")
    run("diff", a.path, b.path, "--json", runs / "d2.json", check=False)
    want = json.load(open(runs / "d2.json"))
    r = a.diff(b)
    got = r.findings(format="records")
    assert [(f["seq"], f["class"]) for f in got] == [(f["seq"], f["class"]) for f in want["findings"]]
    assert {"missing", "extra"} <= {f["class"] for f in got}
    for f in got:
        side = b if f["class"] == "extra" else a
        seq = f.get("seq_run", f["seq"]) if f["class"] == "extra" else f["seq"]
        assert f["identity"] == side.identities([seq])[seq], f


def test_a_passing_check(vk_dir, scratch):
    cap = vk_dir / "vk_compute.sbt"
    rc, _, _ = run("check", cap, "--runs", "2", "--keep", scratch / "k", "--json",
                   scratch / "c.json", check=False)
    want = json.load(open(scratch / "c.json"))
    r = reprise.open(cap).check([scratch / "k" / "run1.sbt", scratch / "k" / "run2.sbt"])
    assert r.verdict == want["verdict"] and r.counts == want["counts"]
    assert len(r.findings()) == len(want["findings"])


# ---- corrupt input -----------------------------------------------------------------------------


def read_everything(path):
    t = reprise.open(path)
    t.ops(columns=list(reprise.COLUMNS))
    return t


def test_bad_golden_files_raise_with_the_c_message():
    d = golden("bad")
    for name in sorted(os.listdir(d)):
        if not name.endswith(".sbt"):
            continue
        expect = open(os.path.join(d, name + ".expect")).readline().strip()
        with pytest.raises(reprise.Error) as e:
            t = reprise.open(os.path.join(d, name))
            t.ops(columns=list(reprise.COLUMNS))
            t.states()
            if t.integrity() and any(s == "problem" for s, _ in t.integrity()):
                raise reprise.CorruptTrace("validate", -2)
        if e.value.message != "validate":
            assert expect in e.value.message, (name, e.value.message)
        assert e.value.status < 0 and e.value.status_name


def test_truncated_and_flipped_files_raise_never_crash(gen_trace, scratch):
    data = open(gen_trace, "rb").read()
    full = reprise.open(gen_trace).ops(columns=list(reprise.COLUMNS), format="numpy")
    bad = scratch / "bad.sbt"
    n_err = n_read = 0
    for cut in list(range(0, 200, 7)) + list(range(len(data) // 2, len(data), len(data) // 37)):
        bad.write_bytes(data[:cut])
        try:
            t = reprise.open(bad)
        except reprise.Error as e:
            n_err += 1
            assert e.message and e.status < 0
            continue
        # a torn file reads back the chunks written whole: a prefix of the ops, incomplete
        n_read += 1
        got = t.ops(columns=list(reprise.COLUMNS), format="numpy")
        n = len(got["seq"])
        assert n < len(full["seq"]) and not t.completeness()["complete"]
        for c in got:
            assert (got[c] == full[c][:n]).all(), c
    assert n_err >= 4 and n_read > 30  # cuts inside the 32-byte header cannot open
    for at in range(0, len(data), len(data) // 50):
        b = bytearray(data)
        b[at] ^= 0x20
        bad.write_bytes(bytes(b))
        try:
            read_everything(bad)
        except reprise.CorruptTrace as e:
            assert e.offset is not None, e.message  # it says where
        except reprise.Error:
            pass


def test_corrupt_chunk_message_names_the_offset(gen_trace, scratch):
    t = reprise.open(gen_trace)
    ch = t.chunks()
    off = int(ch[ch["n_ops"] > 0]["offset"].iloc[3])
    data = bytearray(open(gen_trace, "rb").read())
    data[off + 56 + 10] ^= 0xff  # inside the payload: its CRC no longer matches
    bad = scratch / "c.sbt"
    bad.write_bytes(bytes(data))
    t = reprise.open(bad)
    t.ops(range=(0, 100))  # a range before the damage reads
    with pytest.raises(reprise.CorruptTrace) as e:
        t.ops()
    assert e.value.offset == off and "CRC" in e.value.message
    assert isinstance(e.value, reprise.Error) and e.value.path == str(bad)


def test_errors_of_missing_and_foreign_files(scratch):
    with pytest.raises(reprise.Error) as e:
        reprise.open(scratch / "none.sbt")
    assert "none.sbt" in e.value.message
    with pytest.raises(reprise.Unsupported):
        reprise.open(golden("bad", "tracesmith.sbt"))
    with pytest.raises(reprise.NotFound):
        reprise.open(scratch / "none.procs")
    t = reprise.open(golden("good", "gen-600.sbt"))
    with pytest.raises(reprise.NotFound):
        t.why(10 ** 9)
    t.close()
    with pytest.raises(ValueError):
        t.ops()


# ---- without NumPy and pandas ------------------------------------------------------------------


def test_opens_and_reads_without_numpy_or_pandas():
    code = """
import sys
sys.modules["numpy"] = None
sys.modules["pandas"] = None
import reprise
t = reprise.open(%r)
assert t.devices(format="records")[0]["id"] == 1
a = t.ops(columns=["seq", "dev_end"], format="arrays")
assert list(a["seq"]) == list(range(len(t)))
for call in (lambda: t.ops(), lambda: t.ops(format="numpy"), lambda: t.devices()):
    try:
        call()
        raise SystemExit("no ImportError")
    except ImportError as e:
        assert "python3-" in str(e), e
print("ok")
""" % golden("good", "gen-600.sbt")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.path.join(SRC, "python")))
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr


# ---- make install ------------------------------------------------------------------------------


def test_make_install_builds_c_programs_and_serves_python(scratch):
    prefix = scratch / "usr"
    p = subprocess.run(["make", "-s", "-C", SRC, "install", "BUILD=%s" % BUILD,
                        "PREFIX=%s" % prefix], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    lib = prefix / "lib"
    soname = subprocess.run(["readelf", "-d", str(lib / "libreprise.so")], capture_output=True,
                            text=True).stdout
    assert "[libreprise.so.0]" in soname
    for h in ("format/sbt.h", "scheduler/sched.h", "replay/replay.h", "checker/chk.h"):
        assert (prefix / "include" / "reprise" / h).exists()
    assert not list((prefix / "include").rglob("*_int.h"))
    (scratch / "t.c").write_text(
        '#include "format/sbt.h"\n#include "checker/chk.h"\n#include "scheduler/sched.h"\n'
        '#include "replay/replay.h"\n#include <stdio.h>\n'
        'int main(int c, char **v) { sbt_reader *r; (void)c;\n'
        '  if (sbt_reader_open(v[1], NULL, &r)) { puts(sbt_errmsg()); return 3; }\n'
        '  printf("%llu\\n", (unsigned long long)sbt_reader_info(r)->n_ops);\n'
        '  sbt_reader_close(r); return 0; }\n')
    env = dict(os.environ, PKG_CONFIG_PATH=str(lib / "pkgconfig"))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "reprise"], env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", str(scratch / "t.c"), "-o",
                    str(scratch / "t")] + flags, check=True)
    out = subprocess.run([str(scratch / "t"), golden("good", "gen-600.sbt")], check=True,
                         capture_output=True, text=True,
                         env=dict(os.environ, LD_LIBRARY_PATH=str(lib))).stdout
    assert out.strip() == "600"
    # the installed package loads the installed library, with no hint from the environment
    site = next(prefix.glob("lib/python3*/dist-packages"))
    code = ("import reprise, reprise._lib as L; print(L.LIB_PATH); "
            "print(len(reprise.open(%r)))" % golden("good", "gen-600.sbt"))
    e = {k: v for k, v in os.environ.items() if not k.startswith("REPRISE_")}
    e["PYTHONPATH"] = str(site)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e,
                         cwd=str(scratch))
    assert res.returncode == 0, res.stderr
    path, n = res.stdout.split()
    assert path == str(lib / "libreprise.so.0") and n == "600"


# ---- the README's worked example ---------------------------------------------------------------


def test_readme_example_runs(scratch):
    """The README's Python example, as written, on what its shell commands make."""
    exe = vulkan_or_skip("racy")
    run("capture", "--timing", "--digests", "-o", "racy.sbt", "--", exe, cwd=scratch)
    run("check", "racy.sbt", "--runs", "3", "--keep", "runs", cwd=scratch, check=False)
    text = open(os.path.join(SRC, "README.md")).read()
    sec = text[text.index("## Python: traces and check results as data"):]
    code = re.search(r"```python\n(.*?)```", sec, re.S).group(1)
    p = subprocess.run([sys.executable, "-c", code], cwd=str(scratch), capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=os.path.join(SRC, "python"),
                                           MPLBACKEND="Agg", LP_NUM_THREADS="4"))
    if "'NoneType' object is not subscriptable" in p.stderr:
        pytest.skip("the runs happened to agree: no first divergence to show")
    assert p.returncode == 0, p.stderr
    assert "first divergence: op" in p.stdout and "nondeterministic" in p.stdout
    assert re.search(r"main \[spirv:[0-9a-f]+\]", p.stdout)


def test_races_equal_analyze(scratch):
    """The static races of a program missing its barriers (tests/vk/vk_hazards nobarrier) as
    `reprise analyze --json` lists them; none for the same program with them (ok)."""
    exe = vulkan_or_skip("vk_hazards")
    for mode, n in (("nobarrier", 2), ("ok", 0)):
        p = scratch / (mode + ".sbt")
        run("capture", "-o", p, "--", exe, mode, cwd=scratch)
        r = reprise.open(p).races(format="records")
        _, out, _ = run("analyze", p, "--json", "-")
        want = json.loads(out)["races"]
        assert r["stats"]["declared"] and want["declared"]
        assert r["stats"]["count"] == want["count"] == n
        assert len(r["races"]) == n
        got = sorted((x["first"], x["second"], x["resource"], x["lo"], x["hi"])
                     for x in r["races"])
        listed = sorted((x["first"], x["second"], x["resource"], x["lo"], x["hi"])
                        for x in want["listed"])
        assert got == listed
        assert all(x["missing"] == "execution dependency" for x in r["races"])
