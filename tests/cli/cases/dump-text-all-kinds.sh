gs_mktrace -e 80 --kinds all --file one.gst
gpustarve dump one.gst
