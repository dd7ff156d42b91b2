gpustarve dump no-such-run
