# missing parents are created (as mkdir -p does); the run directory is private
gpustarve run -q -o a/b/c -- touch marker
echo "exit $?"
ls -d a/b/c marker
stat -c %a a/b/c
