gpustarve help dump
