"""ctypes bindings of libreprise.so.0 (the C library's public API: format/sbt.h,
scheduler/sched.h, checker/chk.h). Internal: use the classes of the reprise package.

Where the library is looked for, first match wins:
  1. $REPRISE_LIB (a path to libreprise.so.0)
  2. where `make install` put this package's library (reprise/_installed.py)
  3. the build tree this package sits in (python/reprise -> build/default), or $REPRISE_BUILD
  4. the dynamic linker's search path (libreprise.so.0)
"""

import ctypes
import ctypes.util
import os

from ctypes import (POINTER, Structure, byref, c_char, c_char_p, c_double, c_int, c_int64,
                    c_size_t, c_uint8, c_uint32, c_uint64, c_void_p)

SONAME = "libreprise.so.0"
_HERE = os.path.dirname(os.path.abspath(__file__))
_TREE = os.path.dirname(os.path.dirname(_HERE))  # python/reprise -> the repository root


def _installed():
    try:
        from . import _installed as inst  # written by make install
        return inst
    except ImportError:
        return None


def _candidates():
    env = os.environ.get("REPRISE_LIB")
    if env:
        yield env
        return
    inst = _installed()
    if inst is not None:
        yield os.path.join(inst.LIBDIR, SONAME)
    build = os.environ.get("REPRISE_BUILD")
    if build:
        yield os.path.join(build, SONAME)
    yield os.path.join(_TREE, "build", "default", SONAME)
    yield SONAME  # the dynamic linker's search path


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("reprise: cannot load the C library %s; tried: %s. Build it (make) or "
                      "install it (make install), or set REPRISE_LIB to its path"
                      % (SONAME, "; ".join(tried)))


lib, LIB_PATH = _load()

# ---- format/sbt.h ------------------------------------------------------------------------------

SBT_OK, SBT_EINVAL, SBT_ECORRUPT, SBT_ENOMEM, SBT_EIO = 0, -1, -2, -3, -4
SBT_EVERSION, SBT_EFOREIGN, SBT_ENOTFOUND, SBT_ELIMIT = -5, -6, -7, -8
SEQ_NONE = (1 << 64) - 1


class Hash(Structure):
    _fields_ = [("lo", c_uint64), ("hi", c_uint64)]

    def hex(self):
        # sbt_hash_hex: 32 lowercase hex digits
        buf = ctypes.create_string_buffer(33)
        lib.sbt_hash_hex(self, buf)
        return buf.value.decode()


class Ext(Structure):
    _fields_ = [("kind", c_uint32), ("len", c_uint32), ("data", c_void_p)]


class Device(Structure):
    _fields_ = [("id", c_uint32), ("api", c_uint32), ("name", c_uint32),
                ("vendor_id", c_uint32), ("device_id", c_uint32), ("uuid", c_uint8 * 16),
                ("driver_version", c_uint32), ("api_version", c_uint32),
                ("timestamp_period_fs", c_uint64), ("host", c_uint32), ("ext", Ext)]


class Stream(Structure):
    _fields_ = [("id", c_uint32), ("device", c_uint32), ("kind", c_uint32), ("name", c_uint32),
                ("handle", c_uint64), ("family", c_uint32), ("index", c_uint32), ("ext", Ext)]


class Program(Structure):
    _fields_ = [("id", c_uint32), ("device", c_uint32), ("kind", c_uint32), ("name", c_uint32),
                ("blob", Hash), ("ext", Ext)]


class Kernel(Structure):
    _fields_ = [("id", c_uint32), ("program", c_uint32), ("name", c_uint32), ("ext", Ext)]


class Meta(Structure):
    _fields_ = [("key", c_uint32), ("value", c_uint32)]


class Unsupported(Structure):
    _fields_ = [("what", c_uint32), ("count", c_uint64), ("first_seq", c_uint64),
                ("flags", c_uint32)]


class Info(Structure):
    _fields_ = [("writer_version", c_uint32), ("min_reader_version", c_uint32),
                ("file_bytes", c_uint64), ("n_chunks", c_uint64), ("n_ops", c_uint64),
                ("seq_first", c_uint64), ("seq_end", c_uint64), ("t_min", c_uint64),
                ("t_max", c_uint64), ("n_blobs", c_uint64), ("blob_bytes", c_uint64),
                ("raw_bytes", c_uint64), ("has_footer", c_int), ("writer_finished", c_int),
                ("complete", c_int), ("incomplete_reason", c_uint32), ("lost_offset", c_uint64),
                ("lost_bytes", c_uint64), ("required_features", c_uint32),
                ("n_states", c_uint64)]


class Range(Structure):
    _fields_ = [("has_seq", c_int), ("seq_begin", c_uint64), ("seq_end", c_uint64),
                ("has_time", c_int), ("t_begin", c_uint64), ("t_end", c_uint64),
                ("stream", c_uint32)]


class Access(Structure):
    _fields_ = [("resource", c_uint64), ("offset", c_uint64), ("len", c_uint64),
                ("mode", c_uint32)]


# The fields of struct sbt_columns after sz, in order, with (ctypes type, values per row).
COLUMNS = [
    ("seq", c_uint64, 1), ("kind", c_uint8, 1), ("subkind", c_uint8, 1), ("flags", c_uint32, 1),
    ("stream", c_uint32, 1), ("thread", c_uint32, 1), ("name", c_uint32, 1),
    ("host_begin", c_uint64, 1), ("host_end", c_uint64, 1), ("dev_begin", c_uint64, 1),
    ("dev_end", c_uint64, 1), ("kernel", c_uint32, 1), ("grid", c_uint32, 3),
    ("block", c_uint32, 3), ("shmem", c_uint32, 1), ("bytes", c_uint64, 1),
    ("resource", c_uint64, 1), ("obj", c_uint64, 1), ("value", c_uint64, 1),
    ("blob", c_uint64, 2), ("digest", c_uint64, 2), ("error", c_uint32, 1),
    ("n_access", c_uint32, 1),
]


class Columns(Structure):
    _fields_ = [("sz", c_size_t)] + [(n, POINTER(t)) for n, t, _ in COLUMNS]


class ChunkInfo(Structure):
    _fields_ = [("offset", c_uint64), ("stored_len", c_uint32), ("raw_len", c_uint32),
                ("codec", c_uint32), ("content", c_uint32), ("seq_first", c_uint64),
                ("n_ops", c_uint32), ("t_min", c_uint64), ("t_max", c_uint64)]


class KStat(Structure):
    _fields_ = [("name", c_uint32), ("kernel", c_uint32), ("count", c_uint64),
                ("total_ns", c_uint64), ("min_ns", c_uint64), ("max_ns", c_uint64),
                ("grid", c_uint32 * 3), ("block", c_uint32 * 3), ("geom_varies", c_int)]


N_OP_KINDS = 18  # SBT_OP__COUNT


class Stats(Structure):
    _fields_ = [("n_ops", c_uint64), ("by_kind", c_uint64 * N_OP_KINDS),
                ("copy_bytes", c_uint64 * 5), ("fill_bytes", c_uint64), ("t_min", c_uint64),
                ("t_max", c_uint64), ("kernels", POINTER(KStat)), ("n_kernels", c_uint32)]


class StateAlloc(Structure):
    _fields_ = [("resource", c_uint64), ("size", c_uint64), ("chunk_bytes", c_uint32),
                ("n_present", c_uint64), ("index", POINTER(c_uint64)), ("hash", POINTER(Hash))]


class State(Structure):
    _fields_ = [("seq", c_uint64), ("time", c_uint64), ("n_alloc", c_uint32),
                ("alloc", POINTER(StateAlloc))]


REPORT_FN = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_char_p)

# ---- scheduler/sched.h -------------------------------------------------------------------------


class SchedEdge(Structure):
    _fields_ = [("from_", c_uint64), ("from_val", c_uint64), ("reason", c_uint32),
                ("from_stream", c_uint32), ("flags", c_uint32), ("sync_kind", c_uint32),
                ("obj", c_uint64), ("lo", c_uint64), ("hi", c_uint64)]


class SchedNode(Structure):
    _fields_ = [("op", c_void_p), ("in_", POINTER(SchedEdge)), ("n_in", c_uint32),
                ("val", c_uint64)]


class SchedFinding(Structure):
    _fields_ = [("kind", c_uint32), ("severity", c_uint32), ("seq", c_uint64),
                ("other", c_uint64), ("msg", c_char_p)]


NODE_FN = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(SchedNode))
FINDING_FN = ctypes.CFUNCTYPE(None, c_void_p, POINTER(SchedFinding))


class SchedVisitor(Structure):
    _fields_ = [("node", c_void_p), ("finding", FINDING_FN), ("ctx", c_void_p)]


class SchedRace(Structure):
    _fields_ = [("first", c_uint64), ("second", c_uint64), ("first_stream", c_uint32),
                ("second_stream", c_uint32), ("first_kind", c_uint32), ("second_kind", c_uint32),
                ("first_kernel", c_uint32), ("second_kernel", c_uint32), ("first_mode", c_uint32),
                ("second_mode", c_uint32), ("resource", c_uint64), ("lo", c_uint64),
                ("hi", c_uint64), ("missing", c_uint32), ("msg", c_char_p)]


class SchedRaceOpts(Structure):
    _fields_ = [("sz", c_size_t)]


class SchedRaceStats(Structure):
    _fields_ = [("declared", c_int), ("why_not", c_char_p), ("n_ops", c_uint64),
                ("n_findings", c_uint64), ("n_exec", c_uint64), ("n_memory", c_uint64),
                ("n_barriers", c_uint64), ("n_blind_submits", c_uint64),
                ("n_blind_ops", c_uint64), ("n_forgotten", c_uint64), ("n_dropped", c_uint64),
                ("n_maywaw", c_uint64), ("n_address", c_uint64), ("n_events_forgotten", c_uint64),
                ("n_grants_folded", c_uint64), ("peak_segments", c_uint64),
                ("n_hostpage", c_uint64)]


RACE_FN = ctypes.CFUNCTYPE(None, c_void_p, POINTER(SchedRace))


class SchedGraphOpts(Structure):
    _fields_ = [("sz", c_size_t), ("max_held_ops", c_uint64), ("max_findings_per_kind", c_uint32),
                ("keep_implied", c_int), ("max_events", c_uint64)]


N_DEP = 12  # SCHED_DEP__COUNT
N_FINDING_KINDS = 12  # SCHED_F__COUNT


class SchedGraphStats(Structure):
    _fields_ = [("n_ops", c_uint64), ("n_edges", c_uint64), ("edges", c_uint64 * N_DEP),
                ("findings", c_uint64 * N_FINDING_KINDS), ("n_errors", c_uint64),
                ("n_warnings", c_uint64), ("max_held", c_uint64), ("n_resources", c_uint64),
                ("peak_segments", c_uint64)]


class SchedSimOpts(Structure):
    _fields_ = [("sz", c_size_t), ("analysis", c_int), ("critical_path", c_int),
                ("max_critical_ops", c_uint32)]


class SchedKernelRow(Structure):
    _fields_ = [("name", c_char_p), ("kernel", c_uint32), ("count", c_uint64),
                ("total_ns", c_uint64), ("min_ns", c_uint64), ("max_ns", c_uint64),
                ("mean_ns", c_double), ("grid", c_uint32 * 3), ("block", c_uint32 * 3),
                ("n_geoms", c_uint32), ("crit_ns", c_uint64)]


class SchedStreamRow(Structure):
    _fields_ = [("stream", c_uint32), ("device", c_uint32), ("kind", c_uint32),
                ("n_ops", c_uint64), ("busy_ns", c_uint64), ("first_ns", c_uint64),
                ("last_ns", c_uint64), ("n_gaps", c_uint64), ("gap_ns", c_uint64),
                ("max_gap_ns", c_uint64), ("max_gap_at", c_uint64)]


class SchedDeviceRow(Structure):
    _fields_ = [("device", c_uint32), ("busy_ns", c_uint64), ("n_gaps", c_uint64),
                ("gap_ns", c_uint64), ("max_gap_ns", c_uint64), ("max_gap_at", c_uint64)]


class SchedCritOp(Structure):
    _fields_ = [("seq", c_uint64), ("kind", c_uint32), ("stream", c_uint32), ("name", c_uint32),
                ("kernel", c_uint32), ("start_ns", c_uint64), ("dur_ns", c_uint64)]


class SchedSimResult(Structure):
    _fields_ = [("n_ops", c_uint64), ("n_timed", c_uint64), ("makespan_ns", c_uint64),
                ("captured_ns", c_uint64), ("captured_begin", c_uint64),
                ("total_busy_ns", c_uint64), ("mean_concurrency", c_double),
                ("max_concurrency", c_uint32), ("max_concurrency_at", c_uint64),
                ("late_intervals", c_uint64), ("kernels", POINTER(SchedKernelRow)),
                ("n_kernels", c_uint32), ("streams", POINTER(SchedStreamRow)),
                ("n_streams", c_uint32), ("devices", POINTER(SchedDeviceRow)),
                ("n_devices", c_uint32), ("crit_n_ops", c_uint64), ("crit_busy_ns", c_uint64),
                ("crit", POINTER(SchedCritOp)), ("n_crit", c_uint32)]


class SchedSliceOpts(Structure):
    _fields_ = [("sz", c_size_t), ("collect", c_int), ("window_ops", c_uint32),
                ("floor", c_uint64), ("range_outputs", c_int)]


class SchedSlice(Structure):
    _fields_ = [("range_ops", c_uint64), ("range_first", c_uint64), ("range_last", c_uint64),
                ("slice_ops", c_uint64), ("slice_upload_bytes", c_uint64),
                ("before_ops", c_uint64), ("before_upload_bytes", c_uint64),
                ("uninit_bytes", c_uint64), ("seqs", POINTER(c_uint64)), ("n_seqs", c_uint64),
                ("needs", POINTER(Access)), ("n_needs", c_uint64), ("need_bytes", c_uint64)]


# ---- checker/chk.h -----------------------------------------------------------------------------


class ChkTolerance(Structure):
    _fields_ = [("kind", c_uint32), ("eps", c_double), ("ulps", c_uint64)]


PROGRESS_FN = ctypes.CFUNCTYPE(None, c_void_p, c_uint64, c_uint64)


class ChkOpts(Structure):
    _fields_ = [("sz", c_size_t), ("range", POINTER(Range)), ("tol", ChkTolerance),
                ("elem_type", c_uint32), ("timing_threshold", c_double),
                ("confidence", c_double), ("ref_dump", c_char_p),
                ("run_dumps", POINTER(c_char_p)), ("expect", c_void_p),
                ("expect_update", c_void_p), ("max_findings", c_uint32), ("window", c_uint32),
                ("collect_events", c_int), ("max_events", c_uint64), ("ref_name", c_char_p),
                ("run_names", POINTER(c_char_p)), ("progress", c_void_p),
                ("progress_ctx", c_void_p), ("timing_ref", c_uint32),
                ("allow_regime_change", c_int), ("base_names", POINTER(c_char_p)),
                ("timing_quantile", c_double), ("require_timing", c_int)]


# ---- prototypes --------------------------------------------------------------------------------

def _proto(name, res, *args):
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = list(args)
    return f


R = c_void_p  # sbt_reader *
_proto("sbt_errmsg", c_char_p)
_proto("sbt_strerror", c_char_p, c_int)
_proto("sbt_hash_hex", c_char_p, Hash, c_char_p)
_proto("sbt_api_name", c_char_p, c_uint32)
_proto("sbt_op_kind_name", c_char_p, c_uint32)
_proto("sbt_reader_open", c_int, c_char_p, c_void_p, POINTER(c_void_p))
_proto("sbt_reader_close", None, R)
_proto("sbt_reader_info", POINTER(Info), R)
_proto("sbt_reader_string", c_char_p, R, c_uint32)
_proto("sbt_reader_n_strings", c_uint32, R)
for _t, _s in (("devices", Device), ("streams", Stream), ("programs", Program),
               ("kernels", Kernel), ("meta", Meta), ("unsupported", Unsupported)):
    _proto("sbt_reader_" + _t, POINTER(_s), R, POINTER(c_uint32))
_proto("sbt_reader_incomplete_why", c_size_t, R, c_char_p, c_size_t)
_proto("sbt_reader_chunks", POINTER(ChunkInfo), R, POINTER(c_uint64))
_proto("sbt_reader_fingerprint", Hash, R)
_proto("sbt_reader_state", c_int, R, c_uint64, POINTER(POINTER(State)))
_proto("sbt_state_free", None, POINTER(State))
_proto("sbt_reader_validate", c_int, R, REPORT_FN, c_void_p)
_proto("sbt_cursor_open", c_int, R, POINTER(Range), POINTER(c_void_p))
_proto("sbt_cursor_close", None, c_void_p)
_proto("sbt_cursor_read", c_int, c_void_p, POINTER(Columns), c_uint64, POINTER(c_uint64))
_proto("sbt_cursor_bound", c_uint64, c_void_p)
_proto("sbt_stats_compute", c_int, R, POINTER(Range), POINTER(POINTER(Stats)))
_proto("sbt_stats_free", None, POINTER(Stats))

_proto("sched_errmsg", c_char_p)
_proto("sched_dep_name", c_char_p, c_uint32)
_proto("sched_dep_desc", c_char_p, c_uint32)
_proto("sched_finding_name", c_char_p, c_uint32)
_proto("sched_severity_name", c_char_p, c_uint32)
_proto("sched_why", c_int, R, c_uint64, POINTER(POINTER(SchedEdge)), POINTER(c_uint32))
_proto("sched_why_path", c_int, R, c_uint64, c_uint64, POINTER(POINTER(SchedEdge)),
       POINTER(POINTER(c_uint64)), POINTER(c_uint32))
_proto("sched_races_run", c_int, R, POINTER(SchedRaceOpts), RACE_FN, c_void_p,
       POINTER(SchedRaceStats))
_proto("sched_race_missing_name", c_char_p, c_uint32)
_proto("sched_graph_run", c_int, R, c_uint64, POINTER(SchedGraphOpts), POINTER(SchedVisitor),
       POINTER(SchedGraphStats))
_proto("sched_sim_create", c_int, R, POINTER(Range), POINTER(SchedSimOpts), POINTER(c_void_p))
_proto("sched_sim_finish", c_int, c_void_p)
_proto("sched_sim_result", POINTER(SchedSimResult), c_void_p)
_proto("sched_sim_destroy", None, c_void_p)
_proto("sched_slice_compute", c_int, R, POINTER(Range), POINTER(SchedSliceOpts),
       POINTER(SchedSlice))
_proto("sched_slice_free", None, POINTER(SchedSlice))
_proto("sched_range_bounds", c_int, R, POINTER(Range), POINTER(c_uint64), POINTER(c_uint64))
SCHED_SIM_NODE = ctypes.cast(lib.sched_sim_node, c_void_p).value

_proto("chk_errmsg", c_char_p)
_proto("chk_check", c_int, R, POINTER(c_void_p), c_uint32, POINTER(c_void_p), c_uint32,
       POINTER(ChkOpts), POINTER(c_void_p))
_proto("chk_diff", c_int, R, R, POINTER(ChkOpts), POINTER(c_void_p))
_proto("chk_report_free", None, c_void_p)
_proto("chk_report_json", c_int, c_void_p, c_void_p)
_proto("chk_op_identities", c_int, R, POINTER(c_uint64), c_uint64, c_char_p, c_size_t)

# libc: a FILE * in memory for the reports' JSON writers
libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
_proto_c = libc.open_memstream
_proto_c.restype = c_void_p
_proto_c.argtypes = [POINTER(c_void_p), POINTER(c_size_t)]
libc.fclose.argtypes = [c_void_p]
libc.free.argtypes = [c_void_p]


def memstream_text(write):
    """Calls write(FILE *) on an in-memory stream and returns what it wrote, as str."""
    buf, size = c_void_p(), c_size_t()
    f = libc.open_memstream(byref(buf), byref(size))
    if not f:
        raise MemoryError("open_memstream failed")
    try:
        st = write(f)
    finally:
        libc.fclose(f)
    try:
        text = ctypes.string_at(buf, size.value).decode("utf-8", "replace")
    finally:
        libc.free(buf)
    return st, text


def errmsg():
    return (lib.sbt_errmsg() or b"").decode("utf-8", "replace")


def strerror(st):
    return (lib.sbt_strerror(st) or b"").decode()


__all__ = ["lib", "LIB_PATH", "c_char", "c_int64"]
