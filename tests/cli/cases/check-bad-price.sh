gpustarve check --quick --no-gpu --price 0
