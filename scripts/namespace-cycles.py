"""Namespace dependency graph of one project and its cycles, from the types each file names: python3 scripts/namespace-cycles.py src/Quintet.Manager Quintet.Manager. [-v]"""
import os,re,sys,collections,itertools
root=sys.argv[1]; prefix=sys.argv[2]
files=[]
for dp,dn,fn in os.walk(root):
    if '/obj' in dp or '/bin' in dp: continue
    files+=[os.path.join(dp,f) for f in fn if f.endswith('.cs')]
decl=re.compile(r'\b(?:class|record|struct|interface|enum|delegate\s+[\w<>\[\],\s?]+?)\s+(\w+)')
typens={}
fns={}
src={}
for f in files:
    s=open(f).read()
    s=re.sub(r'//.*','',s)
    src[f]=s
    m=re.search(r'^namespace ([\w.]+);',s,re.M)
    if not m: continue
    ns=m.group(1); fns[f]=ns
    for t in decl.findall(s):
        typens.setdefault(t,set()).add(ns)
edges=collections.defaultdict(set)
why=collections.defaultdict(set)
for f,s in src.items():
    ns=fns.get(f)
    if not ns or not ns.startswith(prefix): continue
    ids=set(re.findall(r'\b[A-Z]\w*\b',s))
    for i in ids:
        for tns in typens.get(i,()):
            if tns!=ns and tns.startswith(prefix) and len(typens[i])==1:
                edges[ns].add(tns); why[(ns,tns)].add(i)
nodes=sorted(set(edges)|{t for v in edges.values() for t in v})
# SCCs (Tarjan)
index={}; low={}; st=[]; on=set(); sccs=[]; c=[0]
def sc(v):
    index[v]=low[v]=c[0]; c[0]+=1; st.append(v); on.add(v)
    for w in edges.get(v,()):
        if w not in index: sc(w); low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],index[w])
    if low[v]==index[v]:
        comp=[]
        while True:
            w=st.pop(); on.discard(w); comp.append(w)
            if w==v: break
        sccs.append(comp)
sys.setrecursionlimit(10000)
for v in nodes:
    if v not in index: sc(v)
for v in nodes:
    print(v.replace(prefix,''),'->',', '.join(sorted(t.replace(prefix,'') for t in edges.get(v,()))))
cyc=[s for s in sccs if len(s)>1]
print('cycles:',len(cyc))
for s in cyc:
    print('  ',sorted(x.replace(prefix,'') for x in s))
    if '-v' in sys.argv:
        for a in s:
            for b in s:
                if (a,b) in why: print('     ',a.replace(prefix,''),'->',b.replace(prefix,''),sorted(why[(a,b)])[:8])
