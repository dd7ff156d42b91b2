gpustarve run -o d
