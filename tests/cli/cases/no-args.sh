# no command: usage on stderr, exit 2
gpustarve
