# last frame cut in half: everything before it, then the damage, exit 2
gs_mktrace -e 40 -F 16 --truncate --kinds read --file t.gst
gpustarve dump t.gst
