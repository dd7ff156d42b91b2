gpustarve help report
