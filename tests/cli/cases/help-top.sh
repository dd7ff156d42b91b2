gpustarve help top
