# Compares the SASS of each kernel in a cubin (fin) with the same kernel in a reference build:
# cl_staged kernels with r5 (the second form), every other kernel with head (the nineteenth version).
# Usage: sass_compare.py FIN.cubin HEAD.cubin [R5.cubin]   (cuobjdump on PATH)
import sys, re, subprocess, collections
def funcs(path):
    out = subprocess.run(['cuobjdump','-sass',path],capture_output=True,text=True).stdout
    d={}; cur=None
    for line in out.splitlines():
        m=re.search(r'Function : (\S+)',line)
        if m: cur=m.group(1); d[cur]=[]; continue
        m=re.match(r'\s+/\*[0-9a-f]+\*/\s+(.*?);',line)
        if m and cur: d[cur].append(m.group(1))
    return d
fin, head, r5 = sys.argv[1], sys.argv[2], (sys.argv[3] if len(sys.argv)>3 else None)
F=funcs(fin); H=funcs(head); R=funcs(r5) if r5 else {}
stats=collections.Counter(); notes=[]
for k,v in F.items():
    ref = R if 'cl_staged' in k else H
    tag = 'staged-vs-r5' if 'cl_staged' in k else 'vs-head'
    if k not in ref: stats[tag+':missing']+=1; continue
    w=ref[k]
    if v==w: stats[tag+':identical']+=1; continue
    op=lambda ins: [re.sub(r'^@!?U?P\w+\s+','',i).split()[0] for i in ins]
    if len(v)==len(w) and collections.Counter(op(v))==collections.Counter(op(w)):
        stats[tag+':same-count-and-opcodes']+=1
    else:
        stats[tag+':DIFFERENT']+=1; notes.append((k, len(w), len(v)))
print(sys.argv[1].split('/')[-1], dict(stats))
for n in notes: print('   ', n[0][:110], n[1], '->', n[2], 'instructions (%+.2f %%)' % (100.0 * (n[2] - n[1]) / n[1]))
