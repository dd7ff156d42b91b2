gs_mktrace -e 40 -F 16 --corrupt 1 --kinds read --file c.gst
gpustarve dump c.gst
