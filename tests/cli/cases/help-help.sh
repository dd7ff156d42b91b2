gpustarve help
