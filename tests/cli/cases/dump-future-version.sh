gs_mktrace -e 20 --version 2.0 --file v.gst
gpustarve dump v.gst
