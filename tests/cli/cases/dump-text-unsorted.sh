# events inside a frame out of time order: printed sorted (stable)
gs_mktrace -e 24 -F 12 --unsorted --kinds read,pread64 --file u.gst
gpustarve dump u.gst
