gs_mktrace -e 20 -F 16 --garbage 50 --kinds read --file g.gst
gpustarve dump g.gst
