gs_mktrace -p 2 -e 30 -F 8 --kinds all run
gpustarve dump --json run
