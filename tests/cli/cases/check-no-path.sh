gpustarve check --quick --no-gpu /no/such/dataset
