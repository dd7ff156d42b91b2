# the first file is damaged: the second is still printed, then exit 2
gs_mktrace -p 2 -e 20 -F 8 --kinds read --corrupt 1 --damage-proc 0 run
gpustarve dump --summary run
