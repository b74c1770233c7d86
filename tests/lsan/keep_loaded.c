/*
 * tests/lsan/keep_loaded.c — a dlclose() that unloads nothing, preloaded (LD_PRELOAD) into every
 * process `make asan` runs, so that LeakSanitizer's verdict does not depend on the Vulkan
 * driver stack installed on the machine.
 *
 * Why. The Vulkan loader dlclose()s the driver (ICD) and the layers when the last instance is
 * destroyed. Memory a driver still points to from its own globals is not a leak, but once the
 * library is unmapped LeakSanitizer no longer sees those globals as roots and reports the
 * blocks as leaked, from "<unknown module>": whether a machine shows it depends on the Mesa
 * build installed there (issue 11: 128 bytes from lavapipe on one machine, nothing on another).
 * Keeping every library mapped until exit removes those false reports, and gives every real
 * leak a stack with module names, which tests/lsan/leaks.sh uses to tell a leak of ours (the
 * capture layer, the CLI, our test programs: modules under the build directory) from one of
 * the driver stack's (everything else), which it ignores. Our own layer stays loaded too, so
 * its leaks are attributed to it instead of to "<unknown module>"; its teardown still runs, at
 * exit (its destructor), under ASan.
 *
 * Not part of reprise: built and used by the test suite only.
 */
#include <stddef.h>

int dlclose(void *handle);

int dlclose(void *handle)
{
    (void)handle;
    return 0;
}
