gpustarve top a b
