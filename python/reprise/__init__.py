"""reprise: traces of GPU command streams, their replays and their checks, as data.

    import reprise
    t = reprise.open("capture.sbt")          # a trace: capture, replay result, sidecar, trimmed
    t.devices(); t.streams(); t.kernels()     # tables (pandas DataFrames; format="records": dicts)
    df = t.ops()                              # ops as columns (DataFrame), no Python object per op
    a = t.ops(range=(1000, 2000), columns=["seq", "kind", "dev_begin"], format="numpy")
    t.kernel_stats(); t.analyze().critical_path; t.why(42); t.slice((1000, 2000))
    r = t.check(["run1.sbt", "run2.sbt"])     # the checker (chk_check) on replay results
    r.first_divergence; r.findings(); r.timing()

Everything runs in the C library (libreprise.so.0, through ctypes): ops go from the trace's
columns straight into NumPy arrays (sbt_cursor_read). NumPy is needed for ops(format="numpy"),
pandas for the DataFrames (format="frame", the default of tables and ops); neither is needed
to open a trace: format="records" (tables) and format="arrays" (ops, as array.array) work with
the standard library alone.

Errors raise reprise.Error (reprise.CorruptTrace for damaged files, reprise.NotFound,
reprise.Unsupported) with the C library's message, its status and the file offset it names.
"""

import array as _array
import builtins as _builtins
import ctypes
import json as _json
import os as _os
import re as _re

from . import _lib
from ._lib import byref, c_uint32, c_uint64, c_void_p, lib

__all__ = ["open", "Trace", "Job", "CheckResult", "Analysis", "Error", "CorruptTrace", "NotFound",
           "Unsupported", "OP_KINDS", "DEFAULT_COLUMNS", "COLUMNS"]

# ---- errors ------------------------------------------------------------------------------------


class Error(Exception):
    """A failure of the C library: .message (its sbt_errmsg/sched_errmsg/chk_errmsg text),
    .status (negative SBT_E* code), .status_name, .offset (the file offset the message names,
    or None), .path."""

    def __init__(self, message, status=_lib.SBT_EINVAL, path=None):
        self.message = message
        self.status = status
        self.status_name = _lib.strerror(status)
        self.path = path
        m = _re.search(r"offset (\d+)", message)
        self.offset = int(m.group(1)) if m else None
        super().__init__(message)


class CorruptTrace(Error):
    """The file is damaged (SBT_ECORRUPT): .offset says where."""


class NotFound(Error):
    """No such op, blob or file (SBT_ENOTFOUND)."""


class Unsupported(Error):
    """A newer format version, an unknown feature, or another tool's file."""


_CLASS = {_lib.SBT_ECORRUPT: CorruptTrace, _lib.SBT_ENOTFOUND: NotFound,
          _lib.SBT_EVERSION: Unsupported, _lib.SBT_EFOREIGN: Unsupported}


def _raise(st, msg, path=None):
    raise _CLASS.get(st, Error)(msg, st, path)


def _check(st, path=None, which="sbt"):
    if st < 0:
        fn = {"sbt": lib.sbt_errmsg, "sched": lib.sched_errmsg, "chk": lib.chk_errmsg}[which]
        _raise(st, (fn() or b"").decode("utf-8", "replace"), path)
    return st


# ---- optional dependencies ---------------------------------------------------------------------


def _numpy():
    try:
        import numpy
        return numpy
    except ImportError:
        raise ImportError("reprise: NumPy is needed for this (Debian: apt-get install "
                          "python3-numpy); without it, use format='arrays' (array.array) or "
                          "format='records'") from None


def _pandas():
    try:
        import pandas
        return pandas
    except ImportError:
        raise ImportError("reprise: pandas is needed for a DataFrame (Debian: apt-get install "
                          "python3-pandas); without it, use format='numpy' or 'arrays' (ops) "
                          "or format='records' (tables)") from None


def _frame_from_arrays(names, arrays):
    """A DataFrame whose columns are the given NumPy arrays themselves, not copies (without
    copy=False pandas consolidates same-dtype columns into new 2-D blocks: twice the memory)."""
    return _pandas().DataFrame(dict(zip(names, arrays)), copy=False)


def _table(rows, columns, fmt):
    if fmt == "records":
        return rows
    if fmt == "frame":
        return _pandas().DataFrame(rows, columns=columns)
    raise ValueError("format must be 'frame' or 'records', not %r" % (fmt,))


# ---- names -------------------------------------------------------------------------------------

OP_KINDS = {k: lib.sbt_op_kind_name(k).decode() for k in range(1, _lib.N_OP_KINDS)}
STREAM_KINDS = {1: "queue", 2: "cuda", 3: "host-thread"}
PROGRAM_KINDS = {1: "spirv", 2: "cubin", 3: "ptx", 4: "fatbin", 5: "host"}
COPY_DIRS = {1: "h2d", 2: "d2h", 3: "d2d", 4: "h2h"}

#: the columns ops() can give (struct sbt_columns), and the derived ones
COLUMNS = [c for c, _, _ in _lib.COLUMNS] + ["kind_name", "op_name", "kernel_name"]
#: what ops() gives without columns=
DEFAULT_COLUMNS = ["seq", "kind", "stream", "kernel", "host_begin", "host_end", "dev_begin",
                   "dev_end"]
_COL = {c: (t, k) for c, t, k in _lib.COLUMNS}
_NP_TYPE = {ctypes.c_uint64: "u8", ctypes.c_uint32: "u4", ctypes.c_uint8: "u1"}
_ARR_CODE = {ctypes.c_uint64: "Q", ctypes.c_uint32: "I", ctypes.c_uint8: "B"}
_SPLIT = {"grid": ("grid_x", "grid_y", "grid_z"), "block": ("block_x", "block_y", "block_z"),
          "blob": ("blob_lo", "blob_hi"), "digest": ("digest_lo", "digest_hi")}


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else None


# ---- opening -----------------------------------------------------------------------------------


def open(path, force_scan=False):
    """Opens what path names, by what it is:
      - a trace file (.sbt): a Trace; its .kind says capture, replay (a replay result, `reprise
        replay -o`), sidecar (snapshots, TRACE-stem.snap.sbt), trimmed (`reprise trim`),
        synthetic (`reprise gen`) or imported;
      - a capture's manifest STEM.procs, or a directory: a Job (one trace per process).
    Raises reprise.Error (CorruptTrace, Unsupported, ...) naming what and where."""
    path = _os.fspath(path)
    if _os.path.isdir(path) or path.endswith(".procs"):
        return Job(path)
    return Trace(path, force_scan=force_scan)


class _OpenOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("max_chunk_bytes", c_uint32),
                ("force_scan", ctypes.c_int)]


def _range(rng=None, time=None, stream=None, t0=0):
    """struct sbt_range from range=(a, b) / slice(a, b) of seqs, time=(a, b) in ns relative to
    the trace start (either side None: open), stream=id. None when nothing limits."""
    if rng is None and time is None and not stream:
        return None
    r = _lib.Range()
    if rng is not None:
        if isinstance(rng, slice):
            if rng.step not in (None, 1):
                raise ValueError("range: a slice of seqs takes no step")
            rng = (rng.start, rng.stop)
        a, b = rng
        r.has_seq, r.seq_begin = 1, int(a or 0)
        r.seq_end = int(b) if b is not None else _lib.SEQ_NONE
        if r.seq_end < r.seq_begin:
            raise ValueError("range: end %d before begin %d" % (r.seq_end, r.seq_begin))
    if time is not None:
        a, b = time
        r.has_time, r.t_begin = 1, t0 + int(a or 0)
        r.t_end = t0 + int(b) if b is not None else _lib.SEQ_NONE
    if stream:
        r.stream = int(stream)
    return r


class Trace:
    """One trace file, open for reading (close() or a with-block releases it). A Trace is
    used by one thread at a time (ops(threads=N) opens readers of its own for its threads)."""

    def __init__(self, path, force_scan=False):
        self.path = _os.fspath(path)
        h = c_void_p()
        opts = _OpenOpts(ctypes.sizeof(_OpenOpts), 0, 1 if force_scan else 0)
        _check(lib.sbt_reader_open(self.path.encode(), byref(opts), byref(h)), self.path)
        self._r = h
        self._strings = None
        i = lib.sbt_reader_info(h).contents
        self.info = {f: getattr(i, f) for f, _ in _lib.Info._fields_}
        self.info["incomplete_reason"] = self.string(i.incomplete_reason)
        self.info["fingerprint"] = lib.sbt_reader_fingerprint(h).hex()
        meta = dict(self._meta_rows())
        self.kind = ("sidecar" if "snapshot.of" in meta else "replay" if "replay.of" in meta
                     else "trimmed" if "trim.of" in meta else None)
        if self.kind is None:
            apis = {d["api"] for d in self.devices(format="records")}
            self.kind = ("synthetic" if apis == {"synthetic"} else "imported" if apis == {"tracesmith"}
                         else "capture")

    # lifetime
    def close(self):
        if getattr(self, "_r", None):
            lib.sbt_reader_close(self._r)
            self._r = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def __repr__(self):
        return "<reprise.Trace %s: %s, %d ops>" % (self.path, self.kind, self.info["n_ops"])

    def job(self):
        """The Job this trace belongs to: the manifest STEM.procs beside it that `reprise
        capture` writes (NotFound when there is none)."""
        stem = self.path[:-4] if self.path.endswith(".sbt") else self.path
        return Job(stem + ".procs")

    def _h(self):
        if not self._r:
            raise ValueError("reprise: the trace %s is closed" % self.path)
        return self._r

    def __len__(self):
        return self.info["n_ops"]

    # strings and tables
    def string(self, sid):
        """The string with this id ("" for 0, None if undefined)."""
        return _s(lib.sbt_reader_string(self._h(), sid))

    def strings(self):
        """Every string of the trace, by id (index 0 is "")."""
        if self._strings is None:
            n = lib.sbt_reader_n_strings(self._h())
            self._strings = [self.string(i) for i in range(n + 1)]
        return self._strings

    def _rows(self, what):
        n = c_uint32()
        p = getattr(lib, "sbt_reader_" + what)(self._h(), byref(n))
        return [p[i] for i in range(n.value)]

    def _meta_rows(self):
        return [(self.string(m.key), self.string(m.value)) for m in self._rows("meta")]

    def devices(self, format="frame"):
        rows = [{"id": d.id, "api": _s(lib.sbt_api_name(d.api)), "name": self.string(d.name),
                 "vendor_id": d.vendor_id, "device_id": d.device_id,
                 "uuid": bytes(d.uuid).hex(), "driver_version": d.driver_version,
                 "api_version": d.api_version, "timestamp_period_fs": d.timestamp_period_fs,
                 "host": self.string(d.host)} for d in self._rows("devices")]
        return _table(rows, ["id", "api", "name", "vendor_id", "device_id", "uuid",
                             "driver_version", "api_version", "timestamp_period_fs", "host"],
                      format)

    def streams(self, format="frame"):
        rows = [{"id": s.id, "device": s.device, "kind": STREAM_KINDS.get(s.kind, str(s.kind)),
                 "name": self.string(s.name), "handle": s.handle, "family": s.family,
                 "index": s.index} for s in self._rows("streams")]
        return _table(rows, ["id", "device", "kind", "name", "handle", "family", "index"], format)

    def programs(self, format="frame"):
        rows = [{"id": p.id, "device": p.device, "kind": PROGRAM_KINDS.get(p.kind, str(p.kind)),
                 "name": self.string(p.name),
                 "blob": p.blob.hex() if (p.blob.lo or p.blob.hi) else None}
                for p in self._rows("programs")]
        return _table(rows, ["id", "device", "kind", "name", "blob"], format)

    def kernels(self, format="frame"):
        rows = [{"id": k.id, "program": k.program, "name": self.string(k.name)}
                for k in self._rows("kernels")]
        return _table(rows, ["id", "program", "name"], format)

    def kernel_names(self):
        """Each kernel's name as the checker and its reports write it, by id - 1: the entry
        point and, when the trace names its program, the program in brackets ("main
        [spirv:9f3a0c2e]": two shaders whose entry points are both main are two names)."""
        progs = {p.id: self.string(p.name) for p in self._rows("programs")}
        out = []
        for k in self._rows("kernels"):
            prog = progs.get(k.program)
            name = self.string(k.name) or "?"
            out.append("%s [%s]" % (name, prog) if prog else name)
        return out

    def metadata(self, format="frame"):
        """Every metadata entry in file order (a key may repeat: the last one holds)."""
        rows = [{"key": k, "value": v} for k, v in self._meta_rows()]
        return _table(rows, ["key", "value"], format)

    def meta(self):
        """Metadata as a dict (the last value of each key)."""
        return dict(self._meta_rows())

    def unsupported(self, format="frame"):
        """Calls the capture could not model: what, how many, first op, affects replay."""
        rows = [{"what": self.string(u.what), "count": u.count,
                 "first_seq": None if u.first_seq == _lib.SEQ_NONE else u.first_seq,
                 "affects_replay": bool(u.flags & 1)} for u in self._rows("unsupported")]
        return _table(rows, ["what", "count", "first_seq", "affects_replay"], format)

    def completeness(self):
        """Whether the trace is whole (a dict): complete, why not (as `reprise info` says it),
        writer_finished, has_footer, lost_offset/lost_bytes of a torn tail, the unmodelled
        calls."""
        buf = ctypes.create_string_buffer(4096)
        lib.sbt_reader_incomplete_why(self._h(), buf, len(buf))
        i = self.info
        return {"complete": bool(i["complete"]), "why": buf.value.decode("utf-8", "replace"),
                "writer_finished": bool(i["writer_finished"]),
                "has_footer": bool(i["has_footer"]), "reason": i["incomplete_reason"],
                "lost_offset": i["lost_offset"], "lost_bytes": i["lost_bytes"],
                "unsupported": self.unsupported(format="records")}

    def chunks(self, format="frame"):
        n = c_uint64()
        p = lib.sbt_reader_chunks(self._h(), byref(n))
        rows = [{f: getattr(p[i], f) for f, _ in _lib.ChunkInfo._fields_} for i in range(n.value)]
        return _table(rows, [f for f, _ in _lib.ChunkInfo._fields_], format)

    def states(self, format="frame"):
        """Snapshots / initial contents (STATE records): seq, time, allocations, bytes stored."""
        rows = []
        for i in range(self.info["n_states"]):
            p = ctypes.POINTER(_lib.State)()
            _check(lib.sbt_reader_state(self._h(), i, byref(p)), self.path)
            s = p.contents
            rows.append({"seq": s.seq, "time": s.time, "allocations": s.n_alloc,
                         "bytes": sum(s.alloc[k].size for k in range(s.n_alloc)),
                         "chunks_stored": sum(s.alloc[k].n_present for k in range(s.n_alloc))})
            lib.sbt_state_free(p)
        return _table(rows, ["seq", "time", "allocations", "bytes", "chunks_stored"], format)

    def integrity(self):
        """`reprise validate`: re-reads every chunk; a list of (severity, message), severity
        'note' or 'problem'."""
        out = []

        def report(ctx, sev, msg):
            out.append(("problem" if sev else "note", _s(msg)))

        cb = _lib.REPORT_FN(report)
        _check(lib.sbt_reader_validate(self._h(), cb, None), self.path)
        return out

    # ops
    def ops(self, range=None, columns=None, time=None, stream=None, format="frame", threads=None):
        """The ops in range as columns, decoded by the C library straight into arrays.

        range: (first, end) or slice(first, end) of op seqs, end excluded; time: (a, b) ns
        relative to the trace start, ops whose span overlaps [a, b); stream: a stream id.
        columns: names from reprise.COLUMNS (default DEFAULT_COLUMNS: seq, kind, stream,
        kernel, host and device begin/end). Fields an op lacks read 0 (dev_* without a device
        time). grid, block (x, y, z) and blob, digest (lo, hi) are several values per op.
        kind_name, op_name, kernel_name (kernel_names(): "main [spirv:9f3a0c2e]") are
        categoricals (frame) / object arrays (numpy).
        format: 'frame' (pandas DataFrame; grid -> grid_x.., blob -> blob_lo, blob_hi),
        'numpy' (dict of arrays; grid is (n, 3)), 'arrays' (dict of array.array, no NumPy).
        threads: readers decoding parts of a seq range at once (default: up to 2, one per CPU,
        for a million ops or more; a time or stream range is read by one)."""
        if format not in ("frame", "numpy", "arrays"):
            raise ValueError("format must be 'frame', 'numpy' or 'arrays', not %r" % (format,))
        cols = list(DEFAULT_COLUMNS if columns is None else columns)
        for c in cols:
            if c not in COLUMNS:
                raise ValueError("reprise: no column %r (columns: %s)" % (c, ", ".join(COLUMNS)))
        derived = [c for c in cols if c not in _COL]
        if format == "arrays" and derived:
            raise ValueError("format='arrays' gives stored columns only, not %s" % derived)
        need = [c for c in cols if c in _COL]
        for c, base in (("kind_name", "kind"), ("op_name", "name"), ("kernel_name", "kernel")):
            if c in cols and base not in need:
                need.append(base)
        rg = _range(range, time, stream, self.info["t_min"])
        arrays, _ = self._read(rg, need, format, threads)
        if format == "arrays":
            return arrays
        out = {}
        for c in cols:
            if c in _COL:
                out[c] = arrays[c]
            else:
                base = {"kind_name": "kind", "op_name": "name", "kernel_name": "kernel"}[c]
                names = (list(OP_KINDS.get(k, "?") for k in _builtins.range(_lib.N_OP_KINDS))
                         if c == "kind_name" else self.strings() if c == "op_name"
                         else [""] + self.kernel_names())
                out[c] = self._names(arrays[base], names, format)
        if format == "numpy":
            return out
        names, flat = [], []
        for c, a in out.items():
            if c in _SPLIT:
                for k, sub in enumerate(_SPLIT[c]):
                    names.append(sub)
                    flat.append(a[:, k])
            else:
                names.append(c)
                flat.append(a)
        return _frame_from_arrays(names, flat)

    def _read(self, rg, need, format, threads):
        """Reads the ops of rg into new arrays of the columns need: (arrays, rows)."""
        h = self._h()
        cur = c_void_p()
        _check(lib.sbt_cursor_open(h, byref(rg) if rg else None, byref(cur)), self.path)
        try:
            bound = lib.sbt_cursor_bound(cur)
            arrays, bases = self._alloc(need, bound, format)
            if threads is None:
                threads = min(2, _os.cpu_count() or 1) if bound >= (1 << 20) else 1
            split = (threads > 1 and format != "arrays" and bound >= 2 * threads and
                     (rg is None or (not rg.has_time and not rg.stream)))
            if not split:
                total = self._fill(cur, bases, 0, bound)
            else:
                lib.sbt_cursor_close(cur)
                cur = None
                total = self._fill_parts(rg, bases, bound, threads, arrays)
        finally:
            if cur:
                lib.sbt_cursor_close(cur)
        for c in need:
            k = _COL[c][1]
            if format == "arrays":
                del arrays[c][total * k:]
            else:
                arrays[c] = arrays[c][:total]
        return arrays, total

    @staticmethod
    def _alloc(need, bound, format):
        arrays, bases = {}, {}
        for c in need:
            t, k = _COL[c]
            if format == "arrays":
                a = _array.array(_ARR_CODE[t], [0]) * (bound * k)
                base = a.buffer_info()[0] if bound else 0
            else:
                a = _numpy().empty((bound, k) if k > 1 else bound, dtype=_NP_TYPE[t])
                base = a.ctypes.data
            arrays[c] = a
            bases[c] = (base, ctypes.sizeof(t) * k, t)
        return arrays, bases

    def _fill(self, cur, bases, at, cap):
        """sbt_cursor_read into rows at..at+cap of the arrays; the rows read."""
        cs = _lib.Columns()
        cs.sz = ctypes.sizeof(_lib.Columns)
        total, got = 0, c_uint64()
        while total < cap:
            for c, (base, width, t) in bases.items():
                setattr(cs, c, ctypes.cast(base + (at + total) * width, ctypes.POINTER(t)))
            _check(lib.sbt_cursor_read(cur, byref(cs), cap - total, byref(got)), self.path)
            if got.value == 0:
                break
            total += got.value
        return total

    def _fill_parts(self, rg, bases, bound, threads, arrays):
        """The seq range cut in `threads` parts, each read by its own reader and cursor on its
        own thread (the C calls release the GIL) into its rows of the same arrays."""
        import threading
        lo = rg.seq_begin if rg is not None else self.info["seq_first"]
        hi = min(rg.seq_end, self.info["seq_end"]) if rg is not None else self.info["seq_end"]
        cuts = [lo + (hi - lo) * i // threads for i in _builtins.range(threads)] + [hi]
        parts = []
        for i in _builtins.range(threads):
            r = c_void_p()
            _check(lib.sbt_reader_open(self.path.encode(), None, byref(r)), self.path)
            sub = _lib.Range(1, cuts[i], cuts[i + 1], 0, 0, 0, 0)
            cur = c_void_p()
            st = lib.sbt_cursor_open(r, byref(sub), byref(cur))
            if st < 0:
                lib.sbt_reader_close(r)
                _check(st, self.path)
            parts.append({"r": r, "cur": cur, "bound": lib.sbt_cursor_bound(cur), "got": 0})
        at = 0
        for p in parts:
            p["at"], at = at, at + p["bound"]
        if at > bound:  # the parts must fit the arrays
            for p in parts:
                lib.sbt_cursor_close(p["cur"])
                lib.sbt_reader_close(p["r"])
            _raise(_lib.SBT_ECORRUPT, "%s: the chunk index counts %d ops in parts, %d in all"
                   % (self.path, at, bound), self.path)

        def work(p):
            try:
                p["got"] = self._fill(p["cur"], bases, p["at"], p["bound"])
            except Error as e:  # raised again on the calling thread
                p["err"] = e

        ts = [threading.Thread(target=work, args=(p,)) for p in parts[1:]]
        for t in ts:
            t.start()
        work(parts[0])
        for t in ts:
            t.join()
        for p in parts:
            lib.sbt_cursor_close(p["cur"])
            lib.sbt_reader_close(p["r"])
        for p in parts:
            if "err" in p:
                raise p["err"]
        total = 0  # parts that gave fewer rows than their bound: close the gaps
        for p in parts:
            if p["at"] != total and p["got"]:
                for a in arrays.values():
                    a[total:total + p["got"]] = a[p["at"]:p["at"] + p["got"]].copy()
            total += p["got"]
        return total

    @staticmethod
    def _names(ids, names, format):
        """ids -> names: a pandas Categorical (frame), else an object array."""
        np = _numpy()
        uniq = sorted(set(n or "" for n in names))
        code = {n: i for i, n in enumerate(uniq)}
        lut = np.array([code[n or ""] for n in names] + [-1], dtype=np.int32)
        idx = np.minimum(ids, len(names))  # an id past the table: -1 (missing)
        codes = lut[idx]
        if format == "frame":
            return _pandas().Categorical.from_codes(codes, categories=uniq)
        return np.array(uniq + [None], dtype=object)[codes]

    # analyses (C library)
    def kernel_stats(self, range=None, time=None, stream=None, format="frame"):
        """`reprise view --stats`: per kernel (or op name) count, total/min/max/mean ns
        (device time where measured, else host time), first geometry (sbt_stats_compute)."""
        rg = _range(range, time, stream, self.info["t_min"])
        p = ctypes.POINTER(_lib.Stats)()
        _check(lib.sbt_stats_compute(self._h(), byref(rg) if rg else None, byref(p)), self.path)
        s = p.contents
        rows = []
        for i in _builtins.range(s.n_kernels):
            k = s.kernels[i]
            rows.append({"name": self.string(k.name), "kernel": k.kernel, "count": k.count,
                         "total_ns": k.total_ns, "mean_ns": k.total_ns / k.count if k.count else 0,
                         "min_ns": k.min_ns, "max_ns": k.max_ns, "grid": tuple(k.grid),
                         "block": tuple(k.block), "geom_varies": bool(k.geom_varies)})
        lib.sbt_stats_free(p)
        return _table(rows, ["name", "kernel", "count", "total_ns", "mean_ns", "min_ns",
                             "max_ns", "grid", "block", "geom_varies"], format)

    def analyze(self, range=None, time=None, stream=None, max_critical_ops=0):
        """`reprise analyze`: the timeline predicted from the recorded durations (streams
        concurrent as far as the dependencies allow), its kernel table, per-stream and
        per-device utilisation, concurrency and the critical path (sched_sim)."""
        return Analysis(self, _range(range, time, stream, self.info["t_min"]), max_critical_ops)

    def why(self, seq, from_seq=None, format="frame"):
        """`reprise analyze --why SEQ[:FROM]`: the dependency edges op seq waits on (from
        sched_why), or a shortest chain of them from op from_seq to op seq (sched_why_path)."""
        edges = ctypes.POINTER(_lib.SchedEdge)()
        n = c_uint32()
        nodes = ctypes.POINTER(c_uint64)()
        if from_seq is None:
            st = lib.sched_why(self._h(), int(seq), byref(edges), byref(n))
        else:
            st = lib.sched_why_path(self._h(), int(seq), int(from_seq), byref(edges),
                                    byref(nodes), byref(n))
        _check(st, self.path, "sched")
        rows = []
        for i in range(n.value):
            e = edges[i]
            rows.append({"to": int(nodes[i + 1]) if from_seq is not None else int(seq),
                         "from": e.from_, "reason": _s(lib.sched_dep_name(e.reason)),
                         "description": _s(lib.sched_dep_desc(e.reason)),
                         "from_stream": e.from_stream, "late": bool(e.flags & 1),
                         "broken": bool(e.flags & 2), "obj": e.obj, "lo": e.lo, "hi": e.hi})
        _lib.libc.free(ctypes.cast(edges, c_void_p))
        _lib.libc.free(ctypes.cast(nodes, c_void_p))
        return _table(rows, ["to", "from", "reason", "description", "from_stream", "late",
                             "broken", "obj", "lo", "hi"], format)

    def slice(self, range=None, time=None, stream=None, collect=True):
        """The backward slice of a range (`reprise replay --mode dry-run` with a range): the
        earlier ops a replay of the range must run first. A dict of counts, plus 'seqs' (the
        slice's ops, a NumPy array when NumPy is here, else a list) when collect."""
        rg = _range(range, time, stream, self.info["t_min"])
        if rg is None:
            raise ValueError("slice: give a range, time or stream")
        opts = _lib.SchedSliceOpts(ctypes.sizeof(_lib.SchedSliceOpts), 1 if collect else 0, 0,
                                   0, 0)
        s = _lib.SchedSlice()
        _check(lib.sched_slice_compute(self._h(), byref(rg), byref(opts), byref(s)), self.path,
               "sched")
        try:
            out = {f: getattr(s, f) for f, _ in _lib.SchedSlice._fields_
                   if f not in ("seqs", "n_seqs", "needs", "n_needs")}
            for f in ("range_first", "range_last"):
                if out[f] == _lib.SEQ_NONE:
                    out[f] = None
            if collect:
                try:
                    np = _numpy()
                    seqs = np.empty(s.n_seqs, dtype="u8")
                    if s.n_seqs:
                        ctypes.memmove(seqs.ctypes.data, s.seqs, 8 * s.n_seqs)
                except ImportError:
                    seqs = [s.seqs[i] for i in range(s.n_seqs)]
                out["seqs"] = seqs
        finally:
            lib.sched_slice_free(byref(s))
        return out

    def findings(self, max_per_kind=100, format="frame"):
        """The dependency graph's validation findings (`reprise replay --mode dry-run`): cycles,
        waits nothing satisfies, use after free, reads of bytes never written, ops on destroyed
        streams, unsupported ops. At most max_per_kind of each kind are listed; counts() of the
        returned frame's attrs / 'counts' key has them all."""
        rows = []

        def finding(ctx, f):
            f = f.contents
            rows.append({"kind": _s(lib.sched_finding_name(f.kind)),
                         "severity": _s(lib.sched_severity_name(f.severity)), "seq": f.seq,
                         "other": None if f.other == _lib.SEQ_NONE else f.other,
                         "message": _s(f.msg)})

        cb = _lib.FINDING_FN(finding)
        v = _lib.SchedVisitor(None, cb, None)
        opts = _lib.SchedGraphOpts(ctypes.sizeof(_lib.SchedGraphOpts), 0, max_per_kind, 0, 0)
        stats = _lib.SchedGraphStats()
        _check(lib.sched_graph_run(self._h(), _lib.SEQ_NONE, byref(opts), byref(v), byref(stats)),
               self.path, "sched")
        rows.sort(key=lambda r: (r["seq"], r["kind"]))
        t = _table(rows, ["kind", "severity", "seq", "other", "message"], format)
        counts = {_s(lib.sched_finding_name(k)): stats.findings[k]
                  for k in range(_lib.N_FINDING_KINDS)}
        if format == "frame":
            t.attrs["counts"] = counts
            return t
        return {"findings": t, "counts": counts}

    def races(self, format="frame"):
        """The races the program's own synchronisation allows (`reprise analyze`, the dry run and
        check's reports list them: sched_races_run): pairs of ops whose accesses conflict that
        nothing the program declared orders, one row each (both seqs, streams and op kinds, the
        resource and bytes [lo, hi), what is missing: 'execution dependency' or 'memory
        dependency', the one-line message). Possible races, never failures. The frame's attrs
        'stats' (with format='records' a dict {'races', 'stats'}) has the counts: declared (0:
        the trace records no declared order, why_not says why), count, execution, memory,
        barriers, and the pairs left out as may-writes."""
        rows = []

        def race(ctx, f):
            f = f.contents
            rows.append({"first": f.first, "second": f.second,
                         "first_stream": f.first_stream, "second_stream": f.second_stream,
                         "first_kind": _s(lib.sbt_op_kind_name(f.first_kind)),
                         "second_kind": _s(lib.sbt_op_kind_name(f.second_kind)),
                         "resource": f.resource, "lo": f.lo, "hi": f.hi,
                         "missing": _s(lib.sched_race_missing_name(f.missing)),
                         "message": _s(f.msg)})

        cb = _lib.RACE_FN(race)
        st = _lib.SchedRaceStats()
        opts = _lib.SchedRaceOpts(ctypes.sizeof(_lib.SchedRaceOpts))
        _check(lib.sched_races_run(self._h(), byref(opts), cb, None, byref(st)), self.path,
               "sched")
        stats = {"declared": bool(st.declared), "why_not": _s(st.why_not) if st.why_not else "",
                 "count": st.n_findings, "execution": st.n_exec, "memory": st.n_memory,
                 "barriers": st.n_barriers, "kernel_may_write_pairs": st.n_maywaw,
                 "device_address_pairs": st.n_address, "host_page_pairs": st.n_hostpage}
        t = _table(rows, ["first", "second", "first_stream", "second_stream", "first_kind",
                          "second_kind", "resource", "lo", "hi", "missing", "message"], format)
        if format == "frame":
            t.attrs["stats"] = stats
            return t
        return {"races": t, "stats": stats}

    def identities(self, seqs):
        """The checker's stable op identities ("s<stream>/<key>#<occurrence>", as
        expectations files key ops) of these op seqs: a dict seq -> identity (chk_op_identities)."""
        seqs = sorted(set(int(s) for s in seqs))
        if not seqs:
            return {}
        stride = 512
        arr = (c_uint64 * len(seqs))(*seqs)
        buf = ctypes.create_string_buffer(stride * len(seqs))
        _check(lib.chk_op_identities(self._h(), arr, len(seqs), buf, stride), self.path, "chk")
        raw = buf.raw
        return {s: raw[i * stride:(i + 1) * stride].split(b"\0", 1)[0].decode()
                for i, s in enumerate(seqs)}

    # check and diff (the checker, chk_check / chk_diff)
    def check(self, results, baseline=(), range=None, time=None, stream=None,
              timing_threshold=None, confidence=None, timing_reference=None, max_findings=0):
        """`reprise check TRACE --results R...`: compares this capture with replay results
        (paths or Traces), aligned by seq, and gates their timings on the baseline results.
        A CheckResult (its .report is the JSON report `reprise check --json` writes)."""
        return _compare(self, results, baseline, "check",
                        _range(range, time, stream, self.info["t_min"]), timing_threshold,
                        confidence, timing_reference, max_findings)

    def diff(self, other, range=None, timing_threshold=None, confidence=None, max_findings=0):
        """`reprise diff A B` with this trace as A (the reference): aligns other's ops with
        these per stream and compares outputs and timings. A CheckResult."""
        return _compare(self, [other], (), "diff", _range(range), timing_threshold, confidence,
                        None, max_findings)


# ---- analyses ----------------------------------------------------------------------------------


class Analysis:
    """The predicted timeline of a trace or range (sched_sim): .summary (dict), .kernels(),
    .streams(), .devices(), .critical_path() as tables (format='frame' | 'records')."""

    def __init__(self, trace, rg, max_critical_ops):
        h = trace._h()
        sim = c_void_p()
        opts = _lib.SchedSimOpts(ctypes.sizeof(_lib.SchedSimOpts), 1, 1, max_critical_ops)
        _check(lib.sched_sim_create(h, byref(rg) if rg else None, byref(opts), byref(sim)),
               trace.path, "sched")
        try:
            lo, hi = c_uint64(0), c_uint64(_lib.SEQ_NONE)
            if rg is not None:
                _check(lib.sched_range_bounds(h, byref(rg), byref(lo), byref(hi)), trace.path,
                       "sched")
            v = _lib.SchedVisitor(_lib.SCHED_SIM_NODE, _lib.FINDING_FN(), sim)
            stats = _lib.SchedGraphStats()
            _check(lib.sched_graph_run(h, hi.value, None, byref(v), byref(stats)), trace.path,
                   "sched")
            _check(lib.sched_sim_finish(sim), trace.path, "sched")
            r = lib.sched_sim_result(sim).contents
            self.summary = {f: getattr(r, f) for f in (
                "n_ops", "n_timed", "makespan_ns", "captured_ns", "captured_begin",
                "total_busy_ns", "mean_concurrency", "max_concurrency", "late_intervals",
                "crit_n_ops", "crit_busy_ns")}
            self.summary["max_concurrency_at_ns"] = r.max_concurrency_at
            self.summary["edges"] = stats.n_edges
            self._kernels = [{"name": _s(k.name), "kernel": k.kernel, "count": k.count,
                              "total_ns": k.total_ns, "mean_ns": k.mean_ns, "min_ns": k.min_ns,
                              "max_ns": k.max_ns, "grid": tuple(k.grid), "block": tuple(k.block),
                              "geometries": k.n_geoms, "critical_ns": k.crit_ns}
                             for k in (r.kernels[i] for i in range(r.n_kernels))]
            self._streams = [{f: getattr(s, f) for f, _ in _lib.SchedStreamRow._fields_}
                             for s in (r.streams[i] for i in range(r.n_streams))]
            self._devices = [{f: getattr(d, f) for f, _ in _lib.SchedDeviceRow._fields_}
                             for d in (r.devices[i] for i in range(r.n_devices))]
            knames = [None] + [trace.string(k.name) for k in trace._rows("kernels")]
            self._crit = [{"seq": c.seq, "kind": OP_KINDS.get(c.kind, "?"), "stream": c.stream,
                           "name": trace.string(c.name),
                           "kernel": knames[c.kernel] if c.kernel < len(knames) else None,
                           "start_ns": c.start_ns, "dur_ns": c.dur_ns}
                          for c in (r.crit[i] for i in range(r.n_crit))]
        finally:
            lib.sched_sim_destroy(sim)

    def kernels(self, format="frame"):
        """Per kernel (or "[copy h2d]"-style row): count, total/mean/min/max ns, geometry of the
        first launch, how many geometries, time on the critical path (critical_ns)."""
        return _table(self._kernels, ["name", "kernel", "count", "total_ns", "mean_ns", "min_ns",
                                      "max_ns", "grid", "block", "geometries", "critical_ns"],
                      format)

    def streams(self, format="frame"):
        return _table(self._streams, [f for f, _ in _lib.SchedStreamRow._fields_], format)

    def devices(self, format="frame"):
        return _table(self._devices, [f for f, _ in _lib.SchedDeviceRow._fields_], format)

    def critical_path(self, format="frame", all_ops=False):
        """The ops of the critical path in order, with their predicted start and duration (the
        first max_critical_ops of them, 1000 by default). Ops that take no time (markers,
        waits) link it but are left out, as `reprise analyze` lists it, unless all_ops."""
        rows = [c for c in self._crit if all_ops or c["dur_ns"]]
        return _table(rows, ["seq", "kind", "stream", "name", "kernel", "start_ns", "dur_ns"],
                      format)


def _as_trace(t):
    return t if isinstance(t, Trace) else Trace(t)


def _compare(ref, results, baseline, mode, rg, threshold, confidence, tref, max_findings):
    runs = [_as_trace(r) for r in results]
    base = [_as_trace(b) for b in baseline]
    if not runs:
        raise ValueError("check: give at least one replay result")
    keep = []
    opts = _lib.ChkOpts()
    opts.sz = ctypes.sizeof(_lib.ChkOpts)
    if rg is not None:
        opts.range = ctypes.pointer(rg)
    opts.timing_threshold = -1.0 if threshold == "off" else float(threshold or 0)
    opts.confidence = float(confidence or 0)
    opts.max_findings = max_findings or 0x7fffffff
    opts.timing_ref = {None: 0, "none": 1, "capture": 2, "baseline": 3}[tref]
    ref_name = ref.path.encode()
    opts.ref_name = ref_name
    names = (ctypes.c_char_p * len(runs))(*[r.path.encode() for r in runs])
    bnames = (ctypes.c_char_p * max(1, len(base)))(*[b.path.encode() for b in base])
    opts.run_names, opts.base_names = names, bnames
    keep += [names, bnames, ref_name]
    rep = c_void_p()
    if mode == "check":
        rr = (c_void_p * len(runs))(*[r._h() for r in runs])
        bb = (c_void_p * max(1, len(base)))(*[b._h() for b in base])
        st = lib.chk_check(ref._h(), rr, len(runs), bb, len(base), byref(opts), byref(rep))
    else:
        st = lib.chk_diff(ref._h(), runs[0]._h(), byref(opts), byref(rep))
    _check(st, ref.path, "chk")
    try:
        st, text = _lib.memstream_text(lambda f: lib.chk_report_json(rep, f))
        _check(st, ref.path, "chk")
    finally:
        lib.chk_report_free(rep)
    res = CheckResult(_json.loads(text), ref, runs[0] if mode == "diff" else None)
    res._range = {}
    if rg is not None:
        res._range = {"range": (rg.seq_begin, rg.seq_end) if rg.has_seq else None,
                      "stream": rg.stream or None}
        if rg.has_time:
            t0 = ref.info["t_min"]
            res._range["time"] = (rg.t_begin - t0, rg.t_end - t0 if rg.t_end != _lib.SEQ_NONE
                                  else None)
    return res


class CheckResult:
    """What `reprise check` / `reprise diff` found, from the checker's own report (the JSON
    `--json` writes, in .report). .verdict ('pass' | 'fail' | 'not-verified'), .passed,
    .counts, .first_divergence (a dict, or None), tables findings(), unverified(), verdicts()
    (findings and unverified ops, one row per op with its verdict), timing() (timing groups
    with their statistics). Op rows carry 'identity', the checker's stable op identity."""

    def __init__(self, report, ref, other=None):
        self.report = report
        self._range = {}
        self._ref, self._other = ref, other
        self.verdict = report.get("verdict")
        self.passed = self.verdict == "pass"
        self.counts = report.get("counts", {})
        seqs = [f["seq"] for f in report.get("findings", []) if f.get("class") != "extra"]
        seqs += [u["seq"] for u in report.get("unverified_ops", [])]
        fd = report.get("first_divergence")
        if fd:
            seqs.append(fd["seq"])
        self._ids = ref.identities(seqs) if seqs else {}
        extra = [f.get("seq_run", f["seq"]) for f in report.get("findings", [])
                 if f.get("class") == "extra"]
        self._extra_ids = {}
        if extra and other is not None:
            self._extra_ids = other.identities(extra)
        self.first_divergence = dict(fd, identity=self._ids.get(fd["seq"])) if fd else None

    def _id(self, f):
        if f.get("class") == "extra":
            return self._extra_ids.get(f.get("seq_run", f["seq"]))
        return self._ids.get(f["seq"])

    def findings(self, format="frame"):
        rows = [dict(f, identity=self._id(f)) for f in self.report.get("findings", [])]
        cols = ["seq", "identity", "class", "run", "kind", "stream", "name", "ref_digest",
                "got_digest", "root", "note"]
        cols += sorted({k for r in rows for k in r} - set(cols))
        return _table(rows, cols, format)

    def unverified(self, format="frame"):
        rows = [dict(u, identity=self._ids.get(u["seq"]))
                for u in self.report.get("unverified_ops", [])]
        cols = ["seq", "identity"] + sorted({k for r in rows for k in r} - {"seq", "identity"})
        return _table(rows, cols, format)

    def verdicts(self, all_ops=False, format="frame"):
        """Per-op verdicts: a finding's class, 'unverified:<why>' (no-digest, one-side,
        skipped, flaky, error), and with all_ops (check results) 'match' for every other
        device op of the checked range (kernels, copies, fills, host reads and ops with a
        digest, as the checker counts them): one row per device op, plus extra ops."""
        rows = {}
        for f in self.report.get("findings", []):
            key = ("extra", f["seq"]) if f.get("class") == "extra" else f["seq"]
            rows.setdefault(key, {"seq": f["seq"], "identity": self._id(f),
                                  "verdict": f["class"]})
        for u in self.report.get("unverified_ops", []):
            rows.setdefault(u["seq"], {"seq": u["seq"], "identity": self._ids.get(u["seq"]),
                                       "verdict": "unverified:" + u.get("why", "?")})
        if all_ops:
            if self._other is not None:
                raise ValueError("verdicts(all_ops=True) is for check results: a diff aligns "
                                 "ops per stream, its matched ops are not listed")
            if self.report.get("findings") and len(self.report["findings"]) < sum(
                    v for k, v in self.counts.items() if k != "timing-regression"):
                raise ValueError("the report lists fewer findings than it counts")
            a = self._ref.ops(columns=["seq", "kind", "flags"], format="arrays",
                              **self._range)
            n_dev = 0
            for seq, kind, flags in zip(a["seq"], a["kind"], a["flags"]):
                if kind in (1, 2, 3, 15) or flags & 0x80:  # chk__is_device_op
                    n_dev += 1
                    rows.setdefault(seq, {"seq": seq, "identity": None, "verdict": "match"})
            if n_dev != self.report.get("device_ops"):
                raise Error("verdicts: %d device ops in the range, the report counts %s"
                            % (n_dev, self.report.get("device_ops")))
        out = sorted(rows.values(), key=lambda r: r["seq"])
        return _table(out, ["seq", "identity", "verdict"], format)

    def timing(self, format="frame"):
        """Timing groups (kernels by program, entry point and geometry; copies and fills by
        direction and size class) with the runs' statistics and the gate's verdict."""
        rows = []
        for k in self.report.get("kernels", []):
            r = {key: v for key, v in k.items() if not isinstance(v, (dict, list))}
            for key, v in k.items():
                if isinstance(v, dict):
                    for kk, vv in v.items():
                        if not isinstance(vv, (dict, list)):
                            r[key + "_" + kk] = vv
                elif isinstance(v, list) and len(v) == 2:
                    r[key + "_lo"], r[key + "_hi"] = v
            rows.append(r)
        cols = list(rows[0].keys()) if rows else ["name", "verdict"]
        return _table(rows, cols, format)

    def __repr__(self):
        return "<reprise.CheckResult %s: %s>" % (self.verdict, self.counts)


# ---- jobs --------------------------------------------------------------------------------------


class Job:
    """The traces of one capture of several processes: `reprise capture -o out.sbt` writes
    out.sbt (the root process), out.PID.sbt for each other process that used the GPU, and the
    manifest out.procs (one line per process: pid, parent pid, start time in ns, trace path,
    command line). Job(path) takes the manifest (out.procs), or a directory: every *.procs in
    it, and every *.sbt no manifest names. .processes() is the manifest as a table, .traces()
    opens each trace (Trace objects, the root first)."""

    def __init__(self, path):
        self.path = _os.fspath(path)
        self._procs = []
        if _os.path.isdir(self.path):
            manifests = sorted(f for f in _os.listdir(self.path) if f.endswith(".procs"))
            for m in manifests:
                self._procs += self._read_manifest(_os.path.join(self.path, m))
            named = {_os.path.abspath(p["trace"]) for p in self._procs}
            for f in sorted(_os.listdir(self.path)):
                full = _os.path.abspath(_os.path.join(self.path, f))
                if f.endswith(".sbt") and full not in named:
                    self._procs.append({"pid": None, "ppid": None, "start_ns": None,
                                        "trace": full, "cmd": None})
        else:
            if not _os.path.exists(self.path):
                _raise(_lib.SBT_ENOTFOUND, "%s: no such manifest" % self.path, self.path)
            self._procs = self._read_manifest(self.path)

    @staticmethod
    def _read_manifest(path):
        # the format cli_manifest_read reads: pid \t ppid \t start \t trace \t cmd
        rows = []
        base = _os.path.dirname(_os.path.abspath(path))
        with _builtins.open(path, "r", errors="replace") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t", 4)
                if len(parts) < 4 or not all(parts[:4]):
                    continue
                try:
                    pid, ppid, start = int(parts[0]), int(parts[1]), int(parts[2])
                except ValueError:
                    continue
                trace = parts[3]
                if not _os.path.isabs(trace):
                    trace = _os.path.join(base, trace)
                rows.append({"pid": pid, "ppid": ppid, "start_ns": start, "trace": trace,
                             "cmd": parts[4] if len(parts) > 4 else ""})
        rows.sort(key=lambda r: (r["start_ns"] is None, r["start_ns"] or 0))
        return rows

    def processes(self, format="frame"):
        return _table(self._procs, ["pid", "ppid", "start_ns", "trace", "cmd"], format)

    def traces(self):
        """Opens every process's trace (a missing or unreadable one raises, naming it)."""
        return [Trace(p["trace"]) for p in self._procs]

    def __len__(self):
        return len(self._procs)

    def __repr__(self):
        return "<reprise.Job %s: %d processes>" % (self.path, len(self._procs))
