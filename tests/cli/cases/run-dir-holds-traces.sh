# a run directory that already holds traces is refused: exit 2, the command
# is not run, the earlier trace is untouched
gs_mktrace -p 1 -e 10 d
sum_before=$(cksum d/*.gst)
gpustarve run -o d -- touch marker
echo "exit $?"
ls
ls d | wc -l
[ "$(cksum d/*.gst)" = "$sum_before" ] && echo "earlier trace untouched"
