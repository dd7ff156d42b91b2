gpustarve check --quick --no-gpu --threads 0 .
