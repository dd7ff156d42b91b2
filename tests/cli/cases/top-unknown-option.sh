gpustarve top --bogus
