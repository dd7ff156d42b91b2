gs_mktrace -e 12 --nasty --kinds read,note --file n.gst
gpustarve dump --json n.gst
