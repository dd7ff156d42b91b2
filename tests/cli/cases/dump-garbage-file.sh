printf "this is not a trace at all\n" > x.gst
gpustarve dump x.gst
