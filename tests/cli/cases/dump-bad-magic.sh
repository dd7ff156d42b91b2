gs_mktrace -e 20 --bad-magic --file m.gst
gpustarve dump m.gst
