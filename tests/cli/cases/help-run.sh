gpustarve help run
