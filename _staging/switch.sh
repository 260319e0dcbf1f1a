#!/usr/bin/env bash
# The atomic switch: the JAX engine in manifold_dirac/_next replaces the numpy engine.
set -euo pipefail
cd /work/main
P=manifold_dirac
# 1. the old engine and everything built on it go
git rm -rq $P/manifolds $P/mechanics $P/systems $P/interconnection.py $P/testing.py $P/study.py $P/cli.py $P/plotting.py $P/analysis.py
# 2. the new engine moves up
for d in manifolds mechanics systems; do git mv $P/_next/$d $P/$d; done
for f in interconnection testing study cli plotting analysis config; do git mv $P/_next/$f.py $P/$f.py; done
git rm -q $P/_next/__init__.py
rm -rf $P/_next
cp _staging/manifold_dirac__init__.py $P/__init__.py
# 3. relative imports one level up: depth-2 modules '...' -> '..', depth-1 modules '..' -> '.'
for f in $P/manifolds/*.py $P/mechanics/*.py $P/systems/*.py; do sed -i -E 's/^(\s*)from \.\.\.([A-Za-z_])/\1from ..\2/' "$f"; done
for f in $P/interconnection.py $P/testing.py $P/study.py $P/cli.py $P/plotting.py $P/analysis.py $P/config.py; do sed -i -E 's/^(\s*)from \.\.([A-Za-z_])/\1from .\2/' "$f"; done
# 4. tests: the ported suite replaces the old one
git rm -rq tests/mechanics tests/manifolds tests/interconnection tests/dirac tests/test_cli.py tests/test_plotting.py
for x in tests/next/*; do git mv "$x" tests/; done
rm -rf tests/next; rm -f tests/__init__.py
# 5. staged docs, examples, README, benchmarks
for d in docs examples benchmarks tests; do
  if [ -d _staging/$d ]; then cp -r _staging/$d/. $d/; fi
done
[ -f _staging/README.md ] && cp _staging/README.md README.md
[ -f _staging/mkdocs.yml ] && cp _staging/mkdocs.yml mkdocs.yml
git rm -rq _staging
rm -rf _staging
# 6. names
grep -rl "manifold_dirac\._next" --include=*.py --include=*.md . | grep -v "^./.venv" | xargs -r sed -i 's/manifold_dirac\._next\b/manifold_dirac/g'
grep -rln "import manifold_dirac$" tests | xargs -r true
git add -A $P tests docs examples benchmarks README.md mkdocs.yml
