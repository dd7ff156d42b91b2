gpustarve --frobnicate
