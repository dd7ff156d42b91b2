: > e.gst
gpustarve dump e.gst
