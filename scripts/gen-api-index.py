#!/usr/bin/env python3
"""Writes docs/api/index.md: every public function of the module headers
include/memplan/*.h (MP_API declarations), in the order memplan/memplan.h
includes them, grouped by each header's sections, with the first sentence
of the comment above it and a link to its page docs/api/NAME.md when there
is one.

    python3 scripts/gen-api-index.py          # rewrite docs/api/index.md
    python3 scripts/gen-api-index.py --check  # exit 1 if it is out of date,
                                              # a page names no function, or
                                              # a page's synopsis does not
                                              # include the header declaring
                                              # its function or differs from
                                              # the declaration there

Standard library only. tests/test_api.c runs --check.
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
HDR_DIR = os.path.join(ROOT, 'include', 'memplan')
API_DIR = os.path.join(ROOT, 'docs', 'api')
INDEX = os.path.join(API_DIR, 'index.md')

UMBRELLA = 'memplan.h'
INCLUDE = re.compile(r'^#include\s+"(\w+\.h)"', re.M)
TOKEN = re.compile(r'(/\*.*?\*/)|(^MP_API[^;]*;)|(\n[ \t]*\n)|(^(?:typedef|\}|#[^\n]*))',
                   re.S | re.M)


def clean_comment(c):
    lines = c[2:-2].split('\n')
    return ' '.join(l.strip().lstrip('*').strip() for l in lines).strip()


def first_sentence(text):
    text = ' '.join(text.split())
    m = re.match(r'(.+?\.)(\s|$)', text)
    s = m.group(1) if m else text
    return s.replace('|', '\\|')


def decl_text(decl):
    """A declaration with its whitespace normalised, as pages quote it."""
    return ' '.join(decl.split())


def parse(path):
    """[(section, name, summary, declaration)] in header order. A comment
    describes the declarations right after it, up to a blank line."""
    with open(path, encoding='utf-8') as f:
        text = f.read()
    out = []
    section = 'General'
    comment = ''
    for m in TOKEN.finditer(text):
        c, decl, blank, other = m.groups()
        if c:
            body = clean_comment(c)
            if body.startswith('----'):
                section = body.strip('- ').strip()
                section = re.sub(r'\s*-{3,}\s*$', '', section)
                comment = ''
            else:
                comment = body
        elif decl:
            d = re.match(r'MP_API\s+.*?\b(mp_\w+)\s*\(', decl_text(decl))
            if d:
                out.append((section, d.group(1), first_sentence(comment),
                            decl_text(decl)))
        else:
            comment = ''
    return out


def headers():
    """The module headers in the order the umbrella memplan.h includes
    them, then any other header of the folder (sorted), umbrella last."""
    present = sorted(n for n in os.listdir(HDR_DIR) if n.endswith('.h'))
    order = []
    if UMBRELLA in present:
        with open(os.path.join(HDR_DIR, UMBRELLA), encoding='utf-8') as f:
            order = [n for n in INCLUDE.findall(f.read()) if n in present]
    order += [n for n in present if n not in order and n != UMBRELLA]
    return order + ([UMBRELLA] if UMBRELLA in present else [])


def page_synopsis(name):
    """(the headers a page's synopsis includes, its declarations)."""
    with open(os.path.join(API_DIR, name + '.md'), encoding='utf-8') as f:
        text = f.read()
    m = re.search(r'^## Synopsis\s*```c\n(.*?)```', text, re.S | re.M)
    if not m:
        return [], []
    body = re.sub(r'/\*.*?\*/', '', m.group(1), flags=re.S)
    incs = re.findall(r'^#include\s+<memplan/(\w+\.h)>', body, re.M)
    decls = [decl_text(d) for d in re.findall(r'MP_API[^;]*;', body)]
    return incs, decls


def check_pages(entries, pages):
    """Problems of the pages' synopses: each must include the module header
    that declares its function and quote the declaration as it is there."""
    problems = []
    for hdr, _, name, _, decl in entries:
        if name not in pages:
            continue
        incs, decls = page_synopsis(name)
        if incs != [hdr]:
            problems.append('%s.md: the synopsis should #include <memplan/%s> '
                            '(includes %s)' % (name, hdr, ', '.join(incs) or 'nothing'))
        if decl not in decls:
            problems.append('%s.md: the synopsis differs from the declaration in '
                            'memplan/%s' % (name, hdr))
    return problems


def build():
    entries = []
    for name in headers():
        entries += [(name,) + e for e in parse(os.path.join(HDR_DIR, name))]
    pages = set()
    if os.path.isdir(API_DIR):
        pages = {f[:-3] for f in os.listdir(API_DIR) if f.endswith('.md') and f != 'index.md'}
    names = [e[2] for e in entries]
    twice = sorted({n for n in names if names.count(n) > 1})
    names = set(names)
    lines = ['# memplan API index', '',
             '<!-- generated by scripts/gen-api-index.py from include/memplan/*.h;',
             '     do not edit: run the script (tests/test_api.c checks it) -->', '',
             'Every public function, in header order, with the first sentence of its',
             'comment in the header. Each section names the module header that',
             'declares it; `<memplan/memplan.h>` includes them all. Functions with a',
             'page of their own (synopsis, description, errors, example) link to it;',
             'for the others the header comment is the reference.',
             '[docs/embedding.md](../embedding.md) walks through the whole flow.', '']
    with_page = sum(1 for n in names if n in pages)
    lines += ['%d functions, %d with a page.' % (len(names), with_page), '']
    cur = None
    for hdr, section, name, summary, _ in entries:
        key = (hdr, section)
        if key != cur:
            cur = key
            lines += ['', '## %s (`memplan/%s`)' % (section, hdr), '',
                      '| function | summary |', '|---|---|']
        link = '[`%s`](%s.md)' % (name, name) if name in pages else '`%s`' % name
        lines.append('| %s | %s |' % (link, summary or '—'))
    stale = sorted(pages - names)
    problems = ['declared in two headers: %s' % n for n in twice]
    problems += check_pages(entries, pages)
    return '\n'.join(lines) + '\n', stale, problems


def main():
    text, stale, problems = build()
    if '--check' in sys.argv[1:]:
        ok = True
        if stale:
            print('gen-api-index: pages for functions no header declares: %s'
                  % ', '.join(stale))
            ok = False
        for p in problems:
            print('gen-api-index: %s' % p)
            ok = False
        try:
            with open(INDEX, encoding='utf-8') as f:
                cur = f.read()
        except OSError:
            cur = None
        if cur != text:
            print('gen-api-index: docs/api/index.md is out of date; run '
                  'python3 scripts/gen-api-index.py')
            ok = False
        sys.exit(0 if ok else 1)
    os.makedirs(API_DIR, exist_ok=True)
    with open(INDEX, 'w', encoding='utf-8') as f:
        f.write(text)
    if stale:
        print('gen-api-index: warning: pages for undeclared functions: %s' % ', '.join(stale))
    for p in problems:
        print('gen-api-index: warning: %s' % p)
    print('gen-api-index: wrote %s' % os.path.relpath(INDEX, ROOT))


if __name__ == '__main__':
    main()
