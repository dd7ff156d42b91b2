gpustarve check --bogus
