gpustarve top
