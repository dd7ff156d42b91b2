gpustarve dump --frobnicate run
