gpustarve run --frobnicate -- true
