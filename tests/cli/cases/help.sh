# top-level usage on stdout, exit 0
gpustarve --help
