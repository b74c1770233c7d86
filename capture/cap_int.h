/*
 * capture/cap_int.h — what the Vulkan layer and the CUDA shim share inside the capture module:
 * how a capture is configured from the environment and the metadata every trace records about
 * the captured process. Only capture/ includes this.
 */
#ifndef REPRISE_CAP_INT_H
#define REPRISE_CAP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "format/sbt.h"

/* 1 if the environment variable is set to something other than "" or "0". */
int cap__env_flag(const char *name);
/* The trace path from REPRISE_TRACE, "%p" replaced by the process id; when unset,
 * reprise-PID.sbt in the working directory (and a line on stderr saying so). */
void cap__trace_path(char *out, size_t cap);
/* Writer options from the environment (REPRISE_ZSTD: level, 0 or negative = uncompressed). */
struct sbt_writer_opts cap__writer_opts(void);
/* Writes capture.api, capture.tool, program, argv, host, clock.domain and both epochs
 * (epoch_ns is the CLOCK_MONOTONIC time the trace's times count from). Returns 0 or the first
 * failing status of the writer. */
int cap__meta_process(sbt_writer *w, const char *api, const char *tool, uint64_t epoch_ns);

#endif
