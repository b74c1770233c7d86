/*
 * cli/cli_devices.c — `reprise devices`: the devices each replay backend can see here, with
 * the index `--device N` takes, or why it sees none (no loader, no driver).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli_int.h"
#include "replay/replay.h"

static const char devices_help[] =
    "usage: reprise devices\n\n"
    "Lists the Vulkan and CUDA devices visible here, with the index that\n"
    "`reprise replay --mode full --device N` takes, or says why an API has none.\n\n"
    "Exit codes: 0 at least one device, 4 no device of any API.\n";

#define MAX_DEV 32

static int list(uint32_t api, const char *label)
{
    struct replay_device_info d[MAX_DEV];
    int n = replay_devices(api, d, MAX_DEV);
    if (n < 0) {
        printf("%-7s none: %s\n", label, replay_errmsg());
        return 0;
    }
    printf("%-7s %d device%s\n", label, n, n == 1 ? "" : "s");
    for (int i = 0; i < n && i < MAX_DEV; i++)
        printf("  %-3u %s (%s, vendor 0x%04x device 0x%04x, API %u.%u.%u, %s)\n", d[i].index,
               d[i].name, d[i].type, d[i].vendor_id, d[i].device_id, d[i].api_version >> 22,
               (d[i].api_version >> 12) & 0x3ff, d[i].api_version & 0xfff, d[i].driver);
    return n;
}

int cli_devices(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(devices_help, stdout);
        return CLI_OK;
    }
    if (argc != 1)
        return cli_usage("devices", "takes no arguments");
    int n = list(SBT_API_VULKAN, "vulkan");
    n += list(SBT_API_CUDA, "cuda");
    return n > 0 ? CLI_OK : CLI_ENV;
}
