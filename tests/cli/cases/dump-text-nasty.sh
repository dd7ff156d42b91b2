# quotes, control bytes and invalid UTF-8 in paths, argv and notes
gs_mktrace -e 30 --nasty --kinds read,note --file n.gst
gpustarve dump n.gst
