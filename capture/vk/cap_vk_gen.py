#!/usr/bin/env python3
"""capture/vk/cap_vk_gen.py - the Vulkan layer's entry points, generated from the registry.

Reads vk.xml (libvulkan-dev: /usr/share/vulkan/registry/vk.xml) and the reviewed class list
capture/vk/cap_vk_classes.txt, and writes into OUTDIR:

  cap_vk_gen.h     the command ids, the next-function tables of an instance and of a device
                   (every typed command of that dispatch level), the command table and the
                   prototypes of the hand-written wrappers (class "recorded")
  cap_vk_gen.c     a typed pass-through wrapper for every unmodelled command, the command
                   table, the name -> command lookup (aliases included), the table loaders
                   and the name of the structure each VkStructureType value declares
  cap_vk_classes.txt  every command of the registry's "vulkan" API with its dispatch level,
                   class and the reason (listed, or the rule that decided); then the names
                   the registry has that are not part of the "vulkan" API, and why

Every command of the "vulkan" API (core versions and every extension that is not disabled,
aliases resolved to the command they name; vulkansc-only ones skipped) gets one class:

  recorded   a hand-written wrapper cap_<Name> exists in capture/vk/cap_vk_*.c
  query      pure: passed through untouched (the layer returns the next layer's function)
  harmless   unmodelled, passed through and counted by name
  affecting  unmodelled, passed through, counted by name, and the trace is marked incomplete
             at the op where it first happened (for a vkCmd*: where a submission carrying it
             reaches the device)

Commands the class list does not name get conservative rules: vkCmd* -> affecting;
vkCreate*/vkAllocate* -> affecting; vkGet*/vkEnumerate* -> query, except those that hand out
device or capture-replay addresses, external handles, descriptor bytes or mapping pointers
(affecting); anything else -> affecting.

Commands of platform extensions other than the provisional ones (win32, xlib, android, ...)
need headers this build does not have: they get no typed wrapper, and vkGet*ProcAddr answers
them with a counting trampoline (cap_vk_tramp.c) like a name the registry does not know.

--check SOURCES...: fails with a message naming the command when the class list says
"recorded" and no wrapper cap_<Name> is defined in SOURCES, or a wrapper is defined for a
command that is not listed "recorded" (a wrapper of a command listed "recorded ... since=N"
beyond the registry is allowed: its source compiles it only where the headers have it).
Python 3 standard library only.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "format"))
from vkxml import vulkan_api, enum_values  # noqa: E402  (the registry reading format/ shares)
import xml.etree.ElementTree as ET

CLASSES = ('recorded', 'query', 'harmless', 'affecting')
LEVELS = {
    'VkInstance': 'INSTANCE',
    'VkPhysicalDevice': 'PHYSICAL_DEVICE',
    'VkDevice': 'DEVICE',
    'VkQueue': 'QUEUE',
    'VkCommandBuffer': 'COMMAND_BUFFER',
}
DEVICE_LEVELS = ('DEVICE', 'QUEUE', 'COMMAND_BUFFER')
# vkGet*/vkEnumerate* that hand out what a replay cannot reproduce without modelling it:
# device and capture-replay addresses, external handles and file descriptors, descriptor bytes,
# host pointers into driver memory. Property queries ("...Properties") stay queries.
HANDS_OUT = re.compile(r'Address|CaptureReplay|CaptureDescriptorData|Handles?(NV|NVX|KHR|'
                       r'FUCHSIA)?$|Fd(KHR|EXT)?$|HardwareBuffer(ANDROID)?$|HostMapping(VALVE)?$|'
                       r'^vkGetDescriptorEXT$')


def die(msg):
    sys.stderr.write('cap_vk_gen.py: ' + msg + '\n')
    sys.exit(1)


def text_of(el):
    return ''.join(t for t in el.itertext()).strip()


class Cmd:
    def __init__(self, name, ret, params):
        self.name = name          # canonical: the <command> element with a prototype
        self.ret = ret            # C return type
        self.params = params      # [(C declaration, parameter name, type name)]
        self.names = []           # names of the "vulkan" API that reach it (canonical first)
        self.platforms = set()    # None = core / non-platform extension
        self.cls = None
        self.why = ''

    @property
    def short(self):
        return self.name[2:]

    @property
    def level(self):
        if not self.params:
            return 'GLOBAL'
        lv = LEVELS.get(self.params[0][2], 'GLOBAL')
        if self.name in ('vkGetInstanceProcAddr',):
            return 'GLOBAL'
        return lv

    @property
    def typed(self):
        return None in self.platforms or 'provisional' in self.platforms

    @property
    def pfn_name(self):
        """A name whose PFN_ typedef the headers define (the canonical one if it is required)."""
        return self.name if self.name in self.names else self.names[0]


def parse_registry(path):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        die('%s: %s' % (path, e))
    version = '?'
    for t in root.iter('type'):
        if t.get('category') == 'define':
            m = re.search(r'#define\s+VK_HEADER_VERSION\s+(\d+)', text_of(t))
            if m:
                version = m.group(1)
    complete = '1.3'
    for t in root.iter('type'):
        if t.get('category') == 'define':
            m = re.search(r'VK_HEADER_VERSION_COMPLETE\s+VK_MAKE_API_VERSION\(\s*0\s*,\s*(\d+)\s*,'
                          r'\s*(\d+)', text_of(t))
            if m:
                complete = m.group(1) + '.' + m.group(2)
    cmds, alias = {}, {}
    all_names = set()
    for c in root.find('commands'):
        if c.get('alias'):
            all_names.add(c.get('name'))
            if vulkan_api(c):
                alias[c.get('name')] = c.get('alias')
            continue
        proto = c.find('proto')
        name = proto.find('name').text
        all_names.add(name)
        if not vulkan_api(c):
            continue
        ret = ''.join(proto.itertext())
        ret = ret[:ret.rfind(name)].strip()
        params = []
        for p in c.findall('param'):
            if not vulkan_api(p):
                continue
            params.append((text_of(p), p.find('name').text, p.find('type').text))
        cmds[name] = Cmd(name, ret, params)
    # who requires each name: vulkan features, and extensions supported by "vulkan"
    req = {}  # name -> set of platform (None for core / non-platform extension)
    for f in root.findall('feature'):
        if not vulkan_api(f):
            continue
        for r in f.findall('require'):
            if not vulkan_api(r):
                continue
            for c in r.findall('command'):
                req.setdefault(c.get('name'), set()).add(None)
    skipped = {}
    for e in root.find('extensions'):
        supported = (e.get('supported') or '').split(',')
        for r in e.findall('require'):
            for c in r.findall('command'):
                n = c.get('name')
                if 'vulkan' not in supported or not vulkan_api(r):
                    skipped.setdefault(n, 'extension %s is %s' % (e.get('name'),
                                       ','.join(supported) or 'unsupported'))
                    continue
                req.setdefault(n, set()).add(e.get('platform'))
    for n in all_names:
        if n not in req and n not in skipped:
            skipped[n] = 'not required by any feature or extension of the vulkan API'
    for n in list(skipped):
        if n in req:
            del skipped[n]
    # resolve aliases onto canonical commands
    for n in sorted(req):
        target = n
        seen = set()
        while target in alias:
            if target in seen:
                die('alias loop at %s' % n)
            seen.add(target)
            target = alias[target]
        if target not in cmds:
            die('%s: alias of %s, which vk.xml does not define' % (n, target))
        c = cmds[target]
        c.names.append(n)
        c.platforms |= req[n]
    used = {}
    for c in cmds.values():
        if c.names:
            c.names.sort(key=lambda x: (x != c.name, x))
            used[c.name] = c
    return version, complete, used, skipped


def parse_classes(path, cmds, version):
    by_name = {}
    for c in cmds.values():
        for n in c.names:
            by_name[n] = c
    listed = {}
    newer = set()  # names listed with since=N beyond this registry
    try:
        lines = open(path).read().split('\n')
    except OSError as e:
        die('%s: %s' % (path, e))
    for i, line in enumerate(lines, 1):
        why = ''
        if '#' in line:
            line, why = line.split('#', 1)
            why = why.strip()
        words = line.split()
        if not words:
            continue
        where = '%s:%d' % (path, i)
        if len(words) < 2 or words[0] not in CLASSES:
            die('%s: expected "<%s> vkName [since=N] [# why]"' % (where, '|'.join(CLASSES)))
        cls, name, opts = words[0], words[1], words[2:]
        since = 0
        for o in opts:
            if o.startswith('since=') and o[6:].isdigit():
                since = int(o[6:])
            else:
                die('%s: unknown option "%s"' % (where, o))
        c = by_name.get(name)
        if not c:
            if since and since > int(version):
                newer.add(name)
                continue  # newer than this registry: nothing to classify here
            die('%s: %s is not a command of vk.xml (header version %s); misspelt? a command '
                'newer than some registry needs since=<header version>' % (where, name, version))
        if c.name in listed:
            die('%s: %s classified twice (also %s)' % (where, name, listed[c.name][1]))
        listed[c.name] = (cls, where, why)
    return listed, newer


def rule(c):
    n = c.name
    if n.startswith('vkCmd'):
        return 'affecting', 'rule: vkCmd* not recorded'
    if n.startswith('vkCreate') or n.startswith('vkAllocate'):
        return 'affecting', 'rule: vkCreate*/vkAllocate* make objects a replay would need'
    if n.startswith('vkGet') or n.startswith('vkEnumerate'):
        if any(HANDS_OUT.search(x) for x in c.names):
            return 'affecting', 'rule: hands out addresses, handles, descriptors or pointers'
        return 'query', 'rule: vkGet*/vkEnumerate*'
    return 'affecting', 'rule: not listed'


def classify(cmds, listed):
    for c in cmds.values():
        if c.name in listed:
            c.cls, where, why = listed[c.name]
            c.why = why or 'listed'
        else:
            c.cls, c.why = rule(c)
        if c.cls in ('harmless', 'affecting') and c.typed and c.level == 'GLOBAL':
            die('%s: a global command cannot be %s (no dispatchable handle to pass it on with); '
                'list it as query' % (c.name, c.cls))
        if c.cls == 'recorded' and not c.typed:
            die('%s: platform command (%s) cannot have a hand-written wrapper'
                % (c.name, ','.join(sorted(p for p in c.platforms if p))))


def check_sources(cmds, sources, classes, newer):
    defined = {}
    for path in sources:
        try:
            t = open(path).read()
        except OSError as e:
            die('%s: %s' % (path, e))
        t = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), t, flags=re.S)
        for m in re.finditer(r'VKAPI_CALL\s+cap_(\w+)\s*\([^;{]*?\)\s*\{', t):
            line = t.count('\n', 0, m.start()) + 1
            defined.setdefault('vk' + m.group(1), '%s:%d' % (path, line))
    recorded = {c.name for c in cmds.values() if c.cls == 'recorded'}
    errors = []
    for n in sorted(recorded - set(defined)):
        errors.append('%s says %s is recorded, but none of the %d sources checked defines '
                      'a wrapper cap_%s' % (classes, n, len(sources), n[2:]))
    for n in sorted(set(defined) - recorded - newer):
        # (a wrapper of a command newer than this registry is compiled out by its #ifdef)
        if n in cmds:
            errors.append('%s: wrapper cap_%s for %s, which %s does not list as recorded (it '
                          'is %s)' % (defined[n], n[2:], n, classes, cmds[n].cls))
        else:
            errors.append('%s: wrapper cap_%s, but vk.xml has no command %s'
                          % (defined[n], n[2:], n))
    if errors:
        die('\n  '.join(['hand-written wrappers and the class list disagree:'] + errors))


def c_str(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"') + '"'


def write_if_changed(path, text):
    try:
        if open(path).read() == text:
            return
    except OSError:
        pass
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:
        f.write(text)
    os.replace(tmp, path)


def stype_names(xml):
    """(value, structure name) of every VkStructureType value a Vulkan structure declares as its
    sType, sorted by value (an alias structure's name is left for the one it aliases)."""
    root = ET.parse(xml).getroot()
    value = enum_values(root, 'VkStructureType')
    names = {}
    for t in root.iter('type'):
        if t.get('category') != 'struct' or t.get('alias') or not vulkan_api(t):
            continue
        for m in t.findall('member'):
            st = m.get('values')
            if m.findtext('name') == 'sType' and st and vulkan_api(m):
                v = value(st.split(',')[0])
                if v is not None and v not in names:
                    names[v] = t.get('name')
    return sorted(names.items())


def generate(version, complete, cmds, skipped, out, xml, classes):
    order = sorted(cmds.values(), key=lambda c: c.name)
    typed = [c for c in order if c.typed]
    inst_fns = [c for c in typed if c.level in ('INSTANCE', 'PHYSICAL_DEVICE')]
    dev_fns = [c for c in typed if c.level in DEVICE_LEVELS]
    src = 'generated by capture/vk/cap_vk_gen.py from %s (header %s.%s) and %s: do not edit' % (
        os.path.basename(xml), complete, version, classes)

    h = ['/* %s */' % src,
         '#ifndef REPRISE_CAP_VK_GEN_H', '#define REPRISE_CAP_VK_GEN_H', '',
         '#include <stdint.h>', '#include <vulkan/vulkan.h>', '',
         '#define CAP_VK_XML_VERSION "%s.%s"' % (complete, version), '',
         '/* The dispatch level of a command: the kind of its first (dispatchable) parameter. */',
         'enum cap_vk_level {', '    CAP_VK_GLOBAL,', '    CAP_VK_INSTANCE,',
         '    CAP_VK_PHYSICAL_DEVICE,', '    CAP_VK_DEVICE,', '    CAP_VK_QUEUE,',
         '    CAP_VK_COMMAND_BUFFER,', '};', '',
         '/* What the layer does with a command (capture/vk/cap_vk_classes.txt). */',
         'enum cap_vk_class {',
         '    CAP_VK_RECORDED,  /* a hand-written wrapper records it */',
         '    CAP_VK_QUERY,     /* pure: passed through untouched */',
         '    CAP_VK_HARMLESS,  /* unmodelled: counted */',
         '    CAP_VK_AFFECTING, /* unmodelled: counted, and the trace is incomplete from its first'
         ' call */',
         '};', '',
         '/* Every command of the "vulkan" API, by canonical name. */',
         'enum cap_vk_cmd_id {']
    for c in order:
        h.append('    CAP_VK_ID_%s,' % c.short)
    h += ['    CAP_VK_N_CMDS', '};', '',
          'struct cap_vk_cmd {',
          '    const char *name;       /* canonical name */',
          '    PFN_vkVoidFunction fn;  /* the layer\'s own function (recorded: the hand-written'
          ' one;',
          '                             * unmodelled: a generated pass-through); NULL: pass the'
          ' next',
          '                             * layer\'s through (a query), or a platform command the'
          ' build',
          '                             * cannot type (a counting trampoline, cap_vk_tramp.c) */',
          '    uint8_t level;          /* enum cap_vk_level */',
          '    uint8_t cls;            /* enum cap_vk_class */',
          '    uint8_t typed;          /* 0: a platform command without its headers here */',
          '};',
          'extern const struct cap_vk_cmd cap_vk_cmds[CAP_VK_N_CMDS];', '',
          '/* The command a name (canonical or alias) reaches; NULL when the registry the layer'
          ' was',
          ' * built from does not know the name. */',
          'const struct cap_vk_cmd *cap_vk_find(const char *name);', '',
          '/* The next layer\'s functions: instance and physical-device level commands of an'
          ' instance. */',
          'struct cap_inst_fns {']
    for c in inst_fns:
        h.append('    PFN_%s %s;' % (c.pfn_name, c.short))
    h += ['};', '/* Device, queue and command-buffer level commands of a device. */',
          'struct cap_dev_fns {']
    for c in dev_fns:
        h.append('    PFN_%s %s;' % (c.pfn_name, c.short))
    h += ['};', '',
          '/* Fill the tables: each command by its names in turn (core, then the extension',
          ' * aliases) until one resolves; NULL when none does. */',
          'void cap_inst_fns_load(struct cap_inst_fns *f, PFN_vkGetInstanceProcAddr gipa,'
          ' VkInstance inst);',
          'void cap_dev_fns_load(struct cap_dev_fns *f, PFN_vkGetDeviceProcAddr gdpa, VkDevice'
          ' dev);', '',
          '/* The structure a VkStructureType value names ("VkPipelineRobustnessCreateInfo"), or',
          ' * NULL when the registry has none. */',
          'const char *cap_vk_stype_name(uint32_t stype);', '',
          '/* The hand-written wrappers (class recorded), in capture/vk/cap_vk_*.c. */']
    for c in order:
        if c.cls == 'recorded':
            h.append('VKAPI_ATTR %s VKAPI_CALL cap_%s(%s);' % (
                c.ret, c.short, ', '.join(p[0] for p in c.params) or 'void'))
    h += ['', '#endif', '']

    g = ['/* %s */' % src,
         '#define _GNU_SOURCE', '#include <stddef.h>', '#include <stdlib.h>',
         '#include <string.h>', '', '#include "capture/vk/cap_vk_int.h"', '',
         '/* ---- pass-through wrappers of the unmodelled commands ---- */', '']
    for c in order:
        if c.cls not in ('harmless', 'affecting') or not c.typed:
            continue
        first = c.params[0][1]
        args = ', '.join(p[1] for p in c.params)
        g.append('static VKAPI_ATTR %s VKAPI_CALL capg_%s(%s)' % (
            c.ret, c.short, ', '.join(p[0] for p in c.params)))
        g.append('{')
        if c.level in DEVICE_LEVELS:
            g.append('    struct cap_dev *d = cap_dev_of(%s);' % first)
            tab, dev = 'd->fn', 'd'
        else:
            g.append('    struct cap_inst *in = cap_inst_of(%s);' % first)
            tab, dev = 'in->fn', 'NULL'
        if c.cls == 'harmless':
            g.append('    cap_vk_count(CAP_VK_ID_%s);' % c.short)
        elif c.level == 'COMMAND_BUFFER' and c.name.startswith('vkCmd'):
            g.append('    cap_vk_count_cmd(%s, CAP_VK_ID_%s);' % (first, c.short))
        else:
            g.append('    cap_vk_count_affecting(CAP_VK_ID_%s, %s);' % (c.short, dev))
        call = '%s.%s(%s)' % (tab, c.short, args)
        if c.ret == 'VkResult':  # a lost device: the trace is written out at once
            g.append('    return cap_vk_result(%s, "%s");' % (call, c.name))
        else:
            g.append('    ' + ('' if c.ret == 'void' else 'return ') + call + ';')
        g.append('}')
        g.append('')
    lv = {'GLOBAL': 'CAP_VK_GLOBAL', 'INSTANCE': 'CAP_VK_INSTANCE',
          'PHYSICAL_DEVICE': 'CAP_VK_PHYSICAL_DEVICE', 'DEVICE': 'CAP_VK_DEVICE',
          'QUEUE': 'CAP_VK_QUEUE', 'COMMAND_BUFFER': 'CAP_VK_COMMAND_BUFFER'}
    cl = {'recorded': 'CAP_VK_RECORDED', 'query': 'CAP_VK_QUERY', 'harmless': 'CAP_VK_HARMLESS',
          'affecting': 'CAP_VK_AFFECTING'}
    g += ['/* ---- the command table ---- */', '',
          'const struct cap_vk_cmd cap_vk_cmds[CAP_VK_N_CMDS] = {']
    for c in order:
        if c.cls == 'recorded':
            fn = '(PFN_vkVoidFunction)cap_%s' % c.short
        elif c.cls in ('harmless', 'affecting') and c.typed:
            fn = '(PFN_vkVoidFunction)capg_%s' % c.short
        else:
            fn = 'NULL'
        g.append('    [CAP_VK_ID_%s] = {%s, %s, %s, %s, %d},' % (
            c.short, c_str(c.name), fn, lv[c.level], cl[c.cls], 1 if c.typed else 0))
    g += ['};', '']
    names = sorted((n, c) for c in order for n in c.names)
    g += ['static const struct {', '    const char *name;', '    uint16_t id;',
          '} names[] = {']
    for n, c in names:
        g.append('    {%s, CAP_VK_ID_%s},' % (c_str(n), c.short))
    g += ['};', '',
          'const struct cap_vk_cmd *cap_vk_find(const char *name)', '{',
          '    size_t a = 0, b = sizeof names / sizeof names[0];',
          '    while (a < b) {',
          '        size_t m = a + (b - a) / 2;',
          '        int k = strcmp(name, names[m].name);',
          '        if (!k)',
          '            return &cap_vk_cmds[names[m].id];',
          '        if (k < 0)',
          '            b = m;',
          '        else',
          '            a = m + 1;',
          '    }',
          '    return NULL;', '}', '']

    def loader(fname, struct, pfn_get, handle_t, fns):
        out = ['/* offset of the member, then its names, each ended by a NUL, the list by an',
               ' * empty name */',
               'static const struct {', '    uint16_t off;', '    const char *names;',
               '} %s_tab[] = {' % fname]
        for c in fns:
            # names are [A-Za-z0-9] and start with "vk": no escapes, no octal digits after \\0
            out.append('    {offsetof(struct %s, %s), "%s\\0"},' % (
                struct, c.short, '\\0'.join(c.names)))
        out += ['};', '',
                'void %s(struct %s *f, %s get, %s h)' % (fname, struct, pfn_get, handle_t), '{',
                '    for (size_t i = 0; i < sizeof %s_tab / sizeof %s_tab[0]; i++) {' % (
                    fname, fname),
                '        PFN_vkVoidFunction fn = NULL;',
                '        for (const char *n = %s_tab[i].names; *n && !fn; n += strlen(n) + 1)'
                % fname,
                '            fn = get(h, n);',
                '        memcpy((char *)f + %s_tab[i].off, &fn, sizeof fn);' % fname,
                '    }', '}', '']
        return out
    g += loader('cap_inst_fns_load', 'cap_inst_fns', 'PFN_vkGetInstanceProcAddr', 'VkInstance',
                inst_fns)
    g += loader('cap_dev_fns_load', 'cap_dev_fns', 'PFN_vkGetDeviceProcAddr', 'VkDevice',
                dev_fns)

    stypes = stype_names(xml)
    g += ['/* Every VkStructureType value with the structure that declares it, by value. */',
          'static const struct {', '    uint32_t stype;', '    const char *name;',
          '} stype_tab[] = {']
    g += ['    {%du, "%s"},' % (v, n) for v, n in stypes]
    g += ['};', '',
          'const char *cap_vk_stype_name(uint32_t stype)', '{',
          '    size_t a = 0, b = sizeof stype_tab / sizeof stype_tab[0];',
          '    while (a < b) {',
          '        size_t m = a + (b - a) / 2;',
          '        if (stype_tab[m].stype == stype)',
          '            return stype_tab[m].name;',
          '        if (stype_tab[m].stype < stype)',
          '            a = m + 1;',
          '        else',
          '            b = m;',
          '    }',
          '    return NULL;', '}', '']

    listing = ['# %s' % src,
               '# command level class typed reason [aliases]']
    for c in order:
        listing.append('%s %s %s %s %s%s' % (
            c.name, c.level.lower(), c.cls, 'typed' if c.typed else
            'untyped(%s)' % ','.join(sorted(p for p in c.platforms if p)),
            '"%s"' % c.why, (' ' + ' '.join(c.names[1:])) if len(c.names) > 1 else ''))
    listing.append('# names of vk.xml outside the "vulkan" API')
    for n in sorted(skipped):
        listing.append('%s skipped "%s"' % (n, skipped[n]))

    os.makedirs(out, exist_ok=True)
    write_if_changed(os.path.join(out, 'cap_vk_gen.h'), '\n'.join(h))
    write_if_changed(os.path.join(out, 'cap_vk_gen.c'), '\n'.join(g))
    write_if_changed(os.path.join(out, 'cap_vk_classes.txt'), '\n'.join(listing) + '\n')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--xml', required=True)
    ap.add_argument('--classes', required=True)
    ap.add_argument('--out', help='directory for the generated files')
    ap.add_argument('--check', nargs='*', metavar='SOURCE',
                    help='only check the hand-written wrappers in SOURCES against the list')
    a = ap.parse_args()
    version, complete, cmds, skipped = parse_registry(a.xml)
    listed, newer = parse_classes(a.classes, cmds, version)
    classify(cmds, listed)
    # every command of the "vulkan" API has a class and a table entry
    for c in cmds.values():
        assert c.cls in CLASSES and c.names, c.name
    if a.check is not None:
        check_sources(cmds, a.check, a.classes, newer)
        return
    if not a.out:
        die('--out or --check is needed')
    generate(version, complete, cmds, skipped, a.out, a.xml, a.classes)


if __name__ == '__main__':
    main()
