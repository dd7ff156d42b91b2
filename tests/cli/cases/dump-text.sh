# two processes, two threads each, small frames
gs_mktrace -p 2 -t 2 -e 60 -F 16 run
gpustarve dump run
