# an -o DIR whose run directories already hold traces: exit 2, nothing run
mkdir -p out/nw0-r1
gs_mktrace -p 1 -e 10 out/nw0-r1
gpustarve sweep -q --num-workers 0,1 -o out -- touch marker
echo "exit $?"
ls
ls out
