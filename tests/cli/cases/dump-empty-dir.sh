mkdir empty
gpustarve dump empty
