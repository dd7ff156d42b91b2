# --append adds this run to a directory that holds traces; without -o it is
# a usage error
gs_mktrace -p 1 -e 10 d
gpustarve run -q --append -o d -- touch marker
echo "exit $?"
ls
gpustarve run --append -- true
echo "exit $?"
