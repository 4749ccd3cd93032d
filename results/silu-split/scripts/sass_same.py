#!/usr/bin/env python3
"""Whether two objects hold the same machine code kernel for kernel: cuobjdump -sass of each, each
kernel's instructions without addresses and encodings, compared as a multiset (the names may
differ: a template argument spelled another way); then, for the kernels whose names match, which
kept their code. Usage: sass_same.py BEFORE.o AFTER.o"""
import sys,subprocess,hashlib,re,collections
def bodies(obj):
    out=subprocess.run(['cuobjdump','-sass',obj],capture_output=True,text=True).stdout
    funcs={}; name=None; lines=[]
    for l in out.splitlines():
        m=re.match(r'\s*Function : (\S+)',l)
        if m:
            if name: funcs[name]='\n'.join(lines)
            name=m.group(1); lines=[]; continue
        m=re.match(r'\s*/\*[0-9a-f]{4,}\*/\s+(.*?);',l)
        if m and name: lines.append(m.group(1))
    if name: funcs[name]='\n'.join(lines)
    return funcs
a=bodies(sys.argv[1]); b=bodies(sys.argv[2])
ha=collections.Counter(hashlib.sha1(v.encode()).hexdigest() for v in a.values())
hb=collections.Counter(hashlib.sha1(v.encode()).hexdigest() for v in b.values())
print(len(a),'kernels before',len(b),'after; identical bodies (multiset):',ha==hb)
print('names that differ:',len(set(a)-set(b)))
# Kernel by kernel where the names match: how many kept their code, and the names of those that did not.
both=sorted(set(a)&set(b)); changed=[n for n in both if a[n]!=b[n]]
print('same name in both:',len(both),'identical:',len(both)-len(changed),'changed:',len(changed))
for n in changed: print('  changed',n)
