/*
 * tests/lsan/leaky.c — loads each library named on the command line, calls its lsan_test_leak()
 * (a different size per library, so a report names which), then dlclose()s it, as the Vulkan
 * loader does with drivers and layers. For the leak attribution test in tests/test_capture.c.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        void *h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "leaky: %s\n", dlerror());
            return 2;
        }
        void *(*leak)(size_t) = (void *(*)(size_t))dlsym(h, "lsan_test_leak");
        if (!leak) {
            fprintf(stderr, "leaky: %s has no lsan_test_leak\n", argv[i]);
            return 2;
        }
        leak(1000 + (size_t)i);
        dlclose(h);
    }
    return 0;
}
