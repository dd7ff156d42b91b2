mkdir d
gpustarve report --threads 0 d
