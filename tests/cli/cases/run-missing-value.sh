gpustarve run -o
