gpustarve help frobnicate
