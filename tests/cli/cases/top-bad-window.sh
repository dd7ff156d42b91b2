mkdir d
gpustarve top --window 0 d
