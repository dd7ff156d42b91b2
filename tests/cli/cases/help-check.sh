gpustarve help check
