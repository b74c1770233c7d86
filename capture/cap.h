/*
 * capture/cap.h — the capture module's public face: the names a program, a user or the CLI
 * uses to turn capture on. The capture libraries themselves are loaded into other programs
 * (a Vulkan layer, a CUDA shim); nothing links against them, so this header only defines the
 * contract: environment variables, file names, the layer's name.
 *
 * Vulkan: libVkLayer_reprise_capture.so with its manifest VK_LAYER_REPRISE_capture.json, an
 * explicit layer. Enable it with
 *     VK_ADD_LAYER_PATH=<dir with the manifest> VK_INSTANCE_LAYERS=VK_LAYER_REPRISE_capture \
 *     REPRISE_TRACE=out.sbt PROGRAM
 * or let `reprise capture -o out.sbt -- PROGRAM` set that up. The layer writes one trace per
 * process; it never fails the program: on an internal error it prints one line on stderr,
 * marks the trace incomplete, stops recording and keeps passing calls through.
 */
#ifndef REPRISE_CAP_H
#define REPRISE_CAP_H

#define CAP_VK_LAYER_NAME     "VK_LAYER_REPRISE_capture"
#define CAP_VK_LAYER_LIB      "libVkLayer_reprise_capture.so"
#define CAP_VK_LAYER_MANIFEST "VK_LAYER_REPRISE_capture.json"
/* The CUDA shim, installed under the name libcuda.so.1 in a directory of its own. */
#define CAP_CUDA_SHIM_LIB "libreprise_cuda.so"

/* Output path of the trace. Unset: reprise-<pid>.sbt in the working directory. "%p" in the
 * value is replaced by the process id. One trace per process: the capture's root process
 * (REPRISE_ROOT_PID) writes this path; every other process that uses the GPU writes
 * <stem>.<pid>.sbt beside it (unless "%p" already makes the path its own), so that no process
 * of a tree overwrites another's trace. */
#define CAP_ENV_TRACE "REPRISE_TRACE"
/* The pid of the capture's root process: set by `reprise capture` (the program it starts);
 * when unset, the first process that opens a trace makes itself the root (its children inherit
 * it). */
#define CAP_ENV_ROOT_PID "REPRISE_ROOT_PID"
/* The job this process belongs to (FORMAT.md 3.5, job.id): the same string in every trace of
 * one job. Give it to captures started separately (on several machines) so that they belong
 * together. When it is unset: the launcher's job id (CAP_LAUNCHERS); else `reprise capture`
 * sets one (host, the root's pid, the time); a capture without either (the layer enabled by
 * hand) makes one in its first process from the host, the root's pid and the root's start
 * time, and sets it for the processes it starts. */
#define CAP_ENV_JOB "REPRISE_JOB"
/* This process's rank and the job's number of processes, for launchers other than torchrun
 * (RANK, WORLD_SIZE, LOCAL_RANK), Open MPI (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK), MPICH /
 * Intel MPI (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID), PMIx (PMIX_RANK) and Slurm (SLURM_PROCID,
 * SLURM_NTASKS, SLURM_LOCALID), which are read too; these come first. */
#define CAP_ENV_RANK       "REPRISE_RANK"
#define CAP_ENV_WORLD_SIZE "REPRISE_WORLD_SIZE"
/* The launchers whose variables say a process's rank, in the order they are looked at:
 * X(name recorded as job.rank_from, rank, world size, local rank, the launcher's job id) (NULL:
 * none). The first launcher whose rank variable holds a decimal number below 2^31 gives the
 * rank; the first whose job id variable is set gives the job id when REPRISE_JOB is unset
 * ("openmpi-2125594625"), so that processes a launcher started separately (`mpirun ...
 * reprise capture`, on several machines) belong to one job. */
#define CAP_LAUNCHERS(X)                                                                       \
    X("REPRISE_RANK", CAP_ENV_RANK, CAP_ENV_WORLD_SIZE, "REPRISE_LOCAL_RANK", NULL)            \
    X("torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "TORCHELASTIC_RUN_ID")                   \
    X("openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", \
      "OMPI_MCA_ess_base_jobid")                                                               \
    X("pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", NULL)                                  \
    X("pmix", "PMIX_RANK", NULL, NULL, "PMIX_NAMESPACE")                                       \
    X("slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_JOB_ID")
/* Test only: ns added to every CLOCK_MONOTONIC value the trace records about its clock (the
 * epoch and the clock pairs), as if the trace came from a machine whose monotonic clock is that
 * far ahead; the tests of clock alignment simulate several machines with it. */
#define CAP_ENV_TEST_CLOCK_SHIFT "REPRISE_TEST_CLOCK_SHIFT_NS"
/* The capture's manifest: <stem of REPRISE_TRACE>.procs beside the root trace. Each process
 * appends one line when it opens its trace, in one write:
 *   pid <TAB> parent pid <TAB> start (realtime ns) <TAB> trace path <TAB> command line
 * (tabs and newlines of the command line written as spaces). `reprise capture` starts it
 * empty and reports every trace it lists; `reprise info` shows it. */
#define CAP_MANIFEST_SUFFIX ".procs"
/* "1": timestamp queries around each dispatch (device times of KERNEL ops). Adds two
 * timestamp writes per dispatch; the queue must support timestamps. */
#define CAP_ENV_TIMING "REPRISE_TIMING"
/* "1": a digest of each dispatch's written ranges (KERNEL op digest). Perturbing: the layer
 * waits for every submission to finish before returning from vkQueueSubmit. Only ranges in
 * host-visible memory are digested. */
#define CAP_ENV_DIGESTS "REPRISE_DIGESTS"
/* "0": write chunks uncompressed; otherwise the zstd level (default: the writer's). */
#define CAP_ENV_ZSTD "REPRISE_ZSTD"
/* How host writes into mapped memory are found: "auto" (default: userfaultfd asynchronous
 * write-protection where the kernel and the mapping allow it, else mprotect and the first
 * write fault per page), "uffd", "protect", or "scan" (every mapped page hashed at every
 * submit: no tracking). The choice is recorded in the trace (capture.host_writes). */
#define CAP_ENV_HOST_WRITES "REPRISE_HOST_WRITES"
/* "1": hand the program a copy of every mapping, as the layer does for memory the CPU reads
 * slowly (no HOST_CACHED); for tests on drivers that only have cached memory. */
#define CAP_ENV_HOST_COPY "REPRISE_HOST_COPY"
/* "0": on a CPU device (lavapipe), do not wait inside vkQueueSubmit for a submission that may
 * write mapped memory. By default the layer waits (when the submission cannot be held up by the
 * host: no semaphore or event waits), so that no host write can land among the device's in
 * the same pages: there the device is the CPU, and only the order tells their bytes apart. */
#define CAP_ENV_CPU_WAIT "REPRISE_CPU_DEVICE_WAIT"
/* "1", for tests on lavapipe: treat a CPU device as one that writes memory by DMA (a GPU): no
 * waiting inside vkQueueSubmit, and pages its submissions may write wholly stay protected, so
 * that a host write there is seen and makes the trace incomplete. (On lavapipe the device's own
 * writes are seen as such too.) */
#define CAP_ENV_TEST_DMA "REPRISE_TEST_DMA_DEVICE"
/* "1": print a summary line on stderr when the trace is closed (reprise capture sets it). */
#define CAP_ENV_SUMMARY "REPRISE_SUMMARY"
/* Set by the layer for `reprise capture`: where the root process writes "ops=N calls=N
 * unsupported=N" (and one "unmodelled.NAME=COUNT[ affects]" line per unmodelled call) when it
 * closes its trace, so the CLI can report it (other processes' traces are reported from the
 * traces themselves). */
#define CAP_ENV_STATS "REPRISE_STATS_FILE"
/* CUDA shim: a file to which every cuGetProcAddress answer is appended, one line each:
 * "SYMBOL VERSION FLAGS VARIANT" where VARIANT is the driver export the answer was identified
 * as (the shim then returns its own function for it), "-" when the call failed or returned
 * nothing, "unidentified" (none of the exports: the shim returns a trampoline that notes its
 * first call), or "unidentified, passed through (no slot left)". For runs on a new driver
 * (scripts/gpu-check.sh): which entry points a runtime resolves, and whether each is seen. */
#define CAP_ENV_PROCLOG "REPRISE_CUDA_PROCLOG"

#endif /* REPRISE_CAP_H */
