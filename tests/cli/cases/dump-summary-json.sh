gs_mktrace -p 2 -t 2 -e 200 run
gpustarve dump --summary --json run
