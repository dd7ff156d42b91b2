gs_mktrace -p 3 -t 2 -e 200 run
gpustarve dump --summary run
