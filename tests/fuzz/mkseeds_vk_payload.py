#!/usr/bin/env python3
"""tests/fuzz/mkseeds_vk_payload.py [OUTDIR] — seeds for tests/fuzz/fuzz_vk_payload.c: one small
input per Vulkan payload record the replay backend checks (format/sbt_vk.h gives the layouts),
valid and at the edges, each after the 16 bytes of object sizes the target reads first.
OUTDIR defaults to tests/fuzz/seeds/vk_payload, where the Makefile finds a target's seeds."""
import os
import struct
import sys


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def rec(call, args, data=b""):
    return (varint(call) + varint(len(args)) + b"".join(varint(a) for a in args)
            + varint(len(data)) + data)


SIZES = struct.pack("<QQ", 65536, 4096)
U64 = (1 << 64) - 1
SPIRV = struct.pack("<5I", 0x07230203, 0x00010000, 0, 8, 0)
seeds = {
    "features-vk12": rec(7, [1000049000, 47] + [1, 0] * 23 + [1]),
    "features-core-padding": rec(7, [0, 56] + [0] * 56),
    "features-unknown": rec(7, [12345, 2, 1, 1]),
    "dispatch": rec(80, [7, 3, 0, 0, 0, 64, 1, 1, 0, 0, 9, 4], b"\x01\x00\x00\x00" * 4),
    "dispatch-base-limit": rec(80, [7, 3, 65000, 0, 0, 600, 1, 1, 0, 0, 9, 4]),
    "dispatch-indirect": rec(80, [7, 3, 0, 0, 0, 0, 0, 0, 12, 65532, 9, 4, 0, 0, 0, 0]),
    "binding": rec(81, [0, 1, 0, 7, 12, 2, 256, 1024, 3]),
    "binding-past-end": rec(81, [0, 1, 0, 7, 12, 2, 65280, 512, 3]),
    "binding-image": rec(81, [0, 0, 0, 3, 12, 2, 0, 16, 1]),
    "copy": rec(82, [4, 5, 2, 0, 0, 256, 256, 1024, 512, 9, 1]),
    "copy-overflow": rec(82, [4, 5, 1, U64 - 8, 0, 16, 9, 1]),
    "copy-count": rec(82, [4, 5, 1000000, 0, 0, 4]),
    "fill": rec(83, [4, 0, 4096, 0xdeadbeef, 9, 2]),
    "update": rec(84, [4, 16, 8, 9, 3], b"\x00" * 8),
    "set-binding": rec(36, [0, 7, 1, 32, 0]) + rec(36, [1, 6, 4, 32, 0]),
    "pipeline-layout": rec(34, [3, 0, 2, 1, 2, 1, 32, 0, 128]),
    "pipeline-layout-push": rec(34, [3, 0, 0, 3, 32, 0, 4, 32, 4, 252, 32, 8, 300]),
    "pipeline": rec(32, [7, 0, 2, 3, 32, 64, 1, 1, 32, 0], b"\x00" * 8, ) + rec(33, [0, 0, 4])
    + rec(33, [1, 6, 4]),
    "pipeline-spirv": rec(32, [7, 0x10, 2, 3, 32, 2048, 1, 1, 3, 0], SPIRV),
    "pipeline-stage-flags": rec(32, [7, 0, 2, 3, 32, 64, 1, 1, 8, 0, 2, 0, 0])
    + rec(32, [8, 0, 2, 3, 32, 48, 1, 1, 0, 0, 3, 0, 0]),
    "pipeline-flags2": rec(32, [7, 0x310, 2, 3, 32, 64, 1, 1, 0, 0, 0, 0x10, 1])
    + rec(32, [8, 0, 2, 3, 32, 64, 1, 1, 0, 0, 0, 0x2000000800, 1]),
    "set-layout-push": rec(35, [5, 1, 2]) + rec(36, [0, 7, 1, 32, 0]) + rec(36, [1, 7, 1, 32, 0]),
    "set-layout-indexing": rec(35, [5, 2, 2]) + rec(36, [0, 8, 1, 32, 0])
    + rec(36, [1, 7, 1 << 20, 32, 0xd]) + rec(35, [6, 0, 1]) + rec(36, [0, 7, 4, 32, 1]),
    "set-layout-unknown": rec(35, [5, 0x10, 1]) + rec(36, [0, 8, 1, 32, 0x18]),
    "buffer": rec(49, [4, 65536, 0x23, 0, 0, 0, 1]),
    "buffer-view": rec(51, [8, 4, 109, 256, U64]),
    # images (format/sbt_vk.h): an RGBA8 2D array (32x24, 3 levels, 2 layers: 8064 packed
    # bytes), then the records the backend checks against it
    "image": rec(128, [5, 0, 1, 37, 32, 24, 1, 3, 2, 1, 0, 6, 0, 0, 8064, 1, 0, 0, 0]),
    "image-bad-size": rec(128, [5, 0, 1, 37, 32, 24, 1, 3, 2, 1, 0, 6, 0, 0, 8000, 1, 0]),
    "image-bc1-3d": rec(128, [5, 0, 1, 131, 20, 12, 1, 2, 1, 1, 0, 6, 0, 0, 160, 1, 0])
    + rec(128, [6, 0, 2, 100, 16, 8, 4, 2, 1, 1, 0, 6, 0, 0, 2304, 1, 0]),
    "image-view": rec(128, [5, 0, 1, 37, 32, 24, 1, 3, 2, 1, 0, 6, 0, 0, 8064, 1, 0])
    + rec(130, [6, 5, 0, 5, 37, 0, 0, 0, 0, 1, 0, 3, 0, 2, 0])
    + rec(130, [7, 5, 0, 1, 37, 0, 0, 0, 0, 1, 2, 1, 1, 1, 0]),
    "sampler": rec(131, [7, 0, 1, 1, 1, 2, 2, 2, 0, 1, 0x41800000, 0, 0, 0, 0x41000000, 0, 0, 0,
                         0, 0, 0, 0, 0]),
    "sampler-unnormalized": rec(131, [7, 0, 0, 0, 0, 2, 3, 2, 0, 0, 0x3f800000, 0, 0, 0, 0,
                                      3, 1, 0]),
    "image-binding": rec(136, [0, 1, 0, 1, 6, 5, 7, 1, 1]) + rec(136, [0, 2, 0, 0, 0, 0, 7, 0, 0]),
    "buffer-to-image": rec(128, [5, 0, 1, 37, 32, 24, 1, 3, 2, 1, 0, 6, 0, 0, 8064, 1, 0])
    + rec(137, [3, 5, 7, 2, 256, 40, 30, 1, 0, 0, 2, 0, 0, 0, 32, 24, 1,
                8192, 0, 0, 1, 2, 1, 1, 2, 2, 0, 4, 3, 1, 9, 0]),
    "image-to-buffer-3d": rec(128, [6, 0, 2, 100, 16, 8, 4, 2, 1, 1, 0, 6, 0, 0, 2304, 1, 0])
    + rec(138, [6, 7, 3, 1, 0, 6, 5, 1, 0, 0, 1, 2, 1, 1, 4, 3, 2, 9, 0]),
    "image-copy": rec(128, [5, 0, 1, 37, 32, 24, 1, 3, 2, 1, 0, 6, 0, 0, 8064, 1, 0])
    + rec(128, [6, 0, 1, 37, 40, 30, 1, 1, 1, 1, 0, 6, 0, 0, 4800, 1, 0])
    + rec(139, [5, 7, 6, 7, 1, 1, 0, 1, 1, 2, 3, 0, 1, 0, 0, 1, 20, 15, 0, 16, 10, 1, 9, 0]),
    "blit": rec(128, [5, 0, 1, 37, 32, 24, 1, 3, 2, 1, 0, 6, 0, 0, 8064, 1, 0])
    + rec(140, [5, 7, 5, 7, 1, 1, 1, 0, 0, 1, 0, 0, 0, 32, 24, 1, 1, 1, 1, 1, 16, 12, 0, 0, 0, 1,
                9, 0]),
    "clear": rec(128, [5, 0, 1, 37, 32, 24, 1, 3, 2, 1, 0, 6, 0, 0, 8064, 1, 0])
    + rec(141, [5, 7, 0, 0x3f000000, 0, 0, 0x3f800000, 2, 1, 0, 1, 0, 2, 1, 1, 2, 1, 1, 9, 0]),
    "clear-depth": rec(128, [5, 0, 1, 130, 8, 8, 1, 1, 2, 1, 0, 6, 0, 0, 640, 1, 0])
    + rec(141, [5, 7, 1, 0x3ec00000, 0x5a, 0, 0, 1, 6, 0, 1, 0, 2, 9, 0]),
}
out = sys.argv[1] if len(sys.argv) > 1 else "tests/fuzz/seeds/vk_payload"
os.makedirs(out, exist_ok=True)
for name, payload in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(SIZES + payload)
