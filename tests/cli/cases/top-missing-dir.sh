gpustarve top missing-dir
