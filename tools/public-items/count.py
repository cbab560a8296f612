#!/usr/bin/env python3
"""Count the public items of a crate from rustdoc's JSON (issue 40's method).

RUSTC_BOOTSTRAP=1 cargo rustdoc -p kube-informer --lib --features metrics,probe,schema \
    -- -Z unstable-options --output-format json
python3 tools/public-items/count.py target/doc/kube_informer.json [--list] [--compat]

Walks from the crate root: modules, re-exports (followed to their target, each target counted once), and of each
struct/enum/trait/union its variants, trait items and the items of its inherent impls. Struct fields, trait impls,
blanket and auto-trait impls are not counted. rustdoc's JSON leaves #[doc(hidden)] items out by itself.
"""
import json, sys
from collections import Counter

path = sys.argv[1]
LIST = '--list' in sys.argv
# The count in issue 40's closing note (996 at its start, 1,016 before the cut, 961 after) leaves out enum variants and the functions of traits and of
# enums; --compat reproduces it. Without it, every reachable item is counted.
COMPAT = '--compat' in sys.argv
HIDDEN = '--hidden' in sys.argv
d = json.load(open(path))
idx = d['index']
seen = set()
kinds = Counter()
listing = []

def hidden(it):
    for a in it.get('attrs', []):
        s = a if isinstance(a, str) else json.dumps(a)
        if 'hidden' in s and 'doc' in s:
            return True
    return False

def public(it):
    return it.get('visibility') == 'public' or it.get('visibility') == 'default'

def visit(iid, where, parent=None):
    iid = str(iid)
    it = idx.get(iid)
    if it is None or iid in seen:
        return
    if not HIDDEN and hidden(it):
        return
    inner = it['inner']
    kind = next(iter(inner)) if isinstance(inner, dict) else inner
    if kind == 'use':
        u = inner['use']
        if u.get('id') is not None and str(u['id']) in idx:
            tgt = idx[str(u['id'])]
            tk = next(iter(tgt['inner']))
            if u.get('is_glob') and tk == 'module':
                for c in tgt['inner']['module']['items']:
                    if public(idx.get(str(c), {})):
                        visit(c, where)
                return
            visit(u['id'], where + '::' + u['name'])
        return
    seen.add(iid)
    if kind == 'impl':
        return
    name = it.get('name') or '?'
    if not (COMPAT and (kind == 'variant' or (kind == 'function' and parent in ('trait', 'enum')))):
        kinds[kind] += 1
        listing.append(f'{kind:14} {where}')
    if kind == 'module':
        for c in inner['module']['items']:
            ci = idx.get(str(c))
            if ci is not None and public(ci):
                visit(c, where + ('::' + ci['name'] if ci.get('name') else ''))
    elif kind in ('struct', 'enum', 'union'):
        body = inner[kind]
        if kind == 'enum':
            for v in body['variants']:
                visit(v, where + '::' + idx[str(v)]['name'], kind)
        for imp in body.get('impls', []):
            ii = idx.get(str(imp))
            if ii is None:
                continue
            im = ii['inner']['impl']
            if im.get('trait') is not None or im.get('blanket_impl') is not None or im.get('is_synthetic'):
                continue
            if not HIDDEN and hidden(ii):
                continue
            for m in im['items']:
                mi = idx.get(str(m))
                if mi is not None and public(mi):
                    visit(m, where + '::' + (mi.get('name') or ''), kind)
    elif kind == 'trait':
        for m in inner['trait']['items']:
            visit(m, where + '::' + (idx[str(m)].get('name') or ''), 'trait')

root = idx[str(d['root'])]
visit(d['root'], root['name'])
total = sum(kinds.values()) - 1  # the crate root itself is not an item of the surface
if LIST:
    print('\n'.join(sorted(listing)))
print(dict(kinds))
print('public items (crate root excluded):', total)
