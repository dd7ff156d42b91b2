gpustarve --version
