gpustarve dump
