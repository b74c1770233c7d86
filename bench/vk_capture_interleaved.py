#!/usr/bin/env python3
"""bench/vk_capture_interleaved.py - capture overhead of two layer builds (and GFXReconstruct),
runs interleaved.

On a shared machine the load drifts during a benchmark; running the configurations in turn
(plain, after, before, gfxr, then the next round starting with the next one) spreads the drift
over all of them, which a hyperfine run per configuration does not. Prints a markdown table:
median, min and max wall time, mean CPU (user+sys of the process tree) and the overhead against
the program alone, and the trace size; and the load average before and after.

Usage: bench/vk_capture_interleaved.py AFTER_BUILD BEFORE_BUILD [ROUNDS] -- PROGRAM [ARGS...]
  e.g. LP_NUM_THREADS=0 bench/vk_capture_interleaved.py build/default \\
           /tmp/before/build/default 12 -- build/default/tests/vk/vk_bench dispatch
Each BUILD is a directory with `reprise` and the layer beside it ('-' for BEFORE: none).
GFXR=lz4,none (environment) adds GFXReconstruct's layer with those compressions, when it is
installed (apt-get install gfxreconstruct). Python 3 standard library.
"""
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def run(cmd):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        sys.exit('%s: exit %d' % (' '.join(cmd), p.returncode))
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main():
    if '--' not in sys.argv:
        sys.exit(__doc__)
    i = sys.argv.index('--')
    args, prog = sys.argv[1:i], sys.argv[i + 1:]
    if len(args) < 2 or not prog:
        sys.exit(__doc__)
    after, before = args[0], args[1]
    rounds = int(args[2]) if len(args) > 2 else 12
    out = tempfile.mkdtemp(prefix='reprise-interleave-')
    conf = {
        'plain': prog,
        'after': [os.path.join(after, 'reprise'), 'capture', '-o',
                  os.path.join(out, 'after.sbt'), '--'] + prog,
    }
    if before != '-':
        conf['before'] = [os.path.join(before, 'reprise'), 'capture', '-o',
                          os.path.join(out, 'before.sbt'), '--'] + prog
    gfxr = [c for c in os.environ.get('GFXR', '').split(',') if c]
    if gfxr and not os.path.exists(
            '/usr/share/vulkan/explicit_layer.d/VkLayer_gfxreconstruct.json'):
        sys.exit('GFXR set but GFXReconstruct is not installed (apt-get install gfxreconstruct)')
    for c in gfxr:
        conf['gfxr-' + c] = ['env', 'VK_INSTANCE_LAYERS=VK_LAYER_LUNARG_gfxreconstruct',
                             'GFXRECON_CAPTURE_FILE=' + os.path.join(out, 'gfxr-%s.gfxr' % c),
                             'GFXRECON_CAPTURE_FILE_TIMESTAMP=false',
                             'GFXRECON_LOG_LEVEL=warning',
                             'GFXRECON_CAPTURE_COMPRESSION_TYPE=' + c.upper()] + prog
    load0 = os.getloadavg()[0]
    names = list(conf)
    for n in names:  # warm-up
        run(conf[n])
    res = {n: [] for n in names}
    for r in range(rounds):
        for k in range(len(names)):
            n = names[(r + k) % len(names)]
            res[n].append(run(conf[n]))
    base = statistics.median(w for w, _ in res['plain'])
    base_cpu = statistics.mean(c for _, c in res['plain'])
    print('%d rounds of %s, load %.1f before, %.1f after; traces in %s\n'
          % (rounds, ' '.join(prog), load0, os.getloadavg()[0], out))
    print('| configuration | median wall | min .. max wall | overhead (median) | CPU (mean) |'
          ' CPU overhead | trace bytes |')
    print('|---|---:|---:|---:|---:|---:|---:|')
    for n in names:
        w = statistics.median(x for x, _ in res[n])
        c = statistics.mean(y for _, y in res[n])
        f = os.path.join(out, n + ('.gfxr' if n.startswith('gfxr') else '.sbt'))
        size = str(os.path.getsize(f)) if os.path.exists(f) else ''
        print('| %s | %.1f ms | %.0f .. %.0f ms | %s | %.1f ms | %s | %s |' % (
            n, w * 1000, min(x for x, _ in res[n]) * 1000, max(x for x, _ in res[n]) * 1000,
            '' if n == 'plain' else '%+.1f%%' % ((w / base - 1) * 100), c * 1000,
            '' if n == 'plain' else '%+.1f%%' % ((c / base_cpu - 1) * 100), size))


if __name__ == '__main__':
    main()
