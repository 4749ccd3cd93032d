# Counts the SASS instructions of each kernel in a cuobjdump -sass listing, by opcode (the
# packed kernel: tap words; the plain one: every tap). Usage: python3 sass_ops.py LISTING
import re,sys,collections
txt=open(sys.argv[1]).read()
cur=None; res=collections.OrderedDict()
for line in txt.split('\n'):
    m=re.search(r'Function : (\S+)',line)
    if m: cur='packed' if 'TapWords' in m.group(1) else 'plain'; res[cur]=collections.Counter(); continue
    m=re.match(r'\s+/\*[0-9a-f]{4,}\*/\s+(.*?);',line)
    if m and cur:
        ins=m.group(1).split()
        op=ins[1] if ins[0].startswith('@') else ins[0]
        res[cur][op.split('.')[0]]+=1; res[cur]['TOTAL']+=1
        if ins[0].startswith('@') and op.startswith('FFMA'): res[cur]['FFMA_predicated']+=1
keys=['TOTAL','MUFU','BRA','FFMA','FFMA_predicated','FSEL','FMUL','FADD','LOP3','SHF','R2P','ISETP','LDS','LDG','STG','BAR']
for k,c in res.items(): print(k,' '.join(f'{x}={c[x]}' for x in keys))
